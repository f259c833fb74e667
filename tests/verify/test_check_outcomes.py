"""The original tree's check outcomes are kept per checkout commit, on disk, and only for a clean checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.verify.checkout.check_outcomes import OriginalOutcomes
from bot.verify.checkout.repo_check_list import RepoCheck

CHECK = RepoCheck("python utils/check_copies.py", ("python utils/check_copies.py",), "Makefile: repo-consistency")


def _committed(tmp_path: Path) -> tuple[Path, str]:
    checkout = tmp_path / "checkout"
    (checkout / "src" / "diffusers").mkdir(parents=True)
    (checkout / "src" / "diffusers" / "__init__.py").write_text("")
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "--quiet"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "main"], check=True)
    return checkout, subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_an_outcome_on_a_clean_checkout_is_kept_on_disk_under_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEMOD_CHECK_CACHE", str(tmp_path / "cache"))
    checkout, commit = _committed(tmp_path)
    tree = checkout / "src" / "diffusers"
    OriginalOutcomes(checkout, tree, Path(sys.executable), "ruff==0.9.10").put(CHECK, ("failed", "stale copy"))
    later = OriginalOutcomes(checkout, tree, Path(sys.executable), "ruff==0.9.10")
    assert later.file == tmp_path / "cache" / f"{commit}.json"
    assert list(later.on_disk.values()) == [("failed", "stale copy")]


def test_a_checkout_with_a_changed_tracked_file_keeps_nothing_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEMOD_CHECK_CACHE", str(tmp_path / "cache"))
    checkout, _ = _committed(tmp_path)
    (checkout / "src" / "diffusers" / "__init__.py").write_text("changed = True\n")
    outcomes = OriginalOutcomes(checkout, checkout / "src" / "diffusers", Path(sys.executable), None)
    outcomes.put(CHECK, ("passed", ""))
    assert (outcomes.file, (tmp_path / "cache").exists()) == (None, False)
