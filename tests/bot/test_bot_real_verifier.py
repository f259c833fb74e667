"""One run with the real verifier: a copy of the installed diffusers as the target, one fix group, emulated device."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bot_harness import FAST_CLIENT, REPO
from github_double import GitHubDouble

from bot.runner import BotOptions, run
from bot.verification import real_verifier
from bot.verify.running.zygote import Zygote
from codemods.project.index import installed_diffusers

pytest.importorskip("torch")

DDPM = "src/diffusers/pipelines/ddpm/pipeline_ddpm.py"


def push_installed_diffusers(bare_repo: Path, work: Path) -> None:
    git = ["git", "-c", "user.name=Maintainer", "-c", "user.email=maintainer@example.com"]
    subprocess.run([*git, "clone", "--quiet", str(bare_repo), str(work)], check=True)
    shutil.copytree(installed_diffusers(), work / "src" / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "diffusers 0.42.1"], cwd=work, check=True)
    subprocess.run([*git, "push", "--quiet", "origin", "HEAD:main"], cwd=work, check=True)


def test_real_verifier_on_the_emulated_device_opens_a_verified_pr(github_double: GitHubDouble, tmp_path: Path) -> None:
    push_installed_diffusers(github_double.bare_repo, tmp_path / "seed")
    options = BotOptions(
        repo=REPO,
        token=github_double.token,
        api_url=github_double.api_url,
        select=("DIF004",),
        only=("pipelines/ddpm",),
        device="emu",
        workdir=tmp_path / "work",
        bodies_dir=tmp_path / "bodies",
        client=FAST_CLIENT,
        log=lambda message: None,
    )

    summary = run(options)

    [group] = summary.groups
    assert (group.outcome.value, group.verdict, group.files) == ("opened", "verified", [DDPM])
    body = github_double.pull_request(group.pull_number).body
    row = next(line for line in body.splitlines() if line.startswith("| `DDPMPipeline` | DIF004 | step"))
    assert "**2 → 0**" in row and row.endswith("| ✅ verified |")  # output objects per step: 2 -> 0
    assert (
        "- `DDPMPipeline`: max abs diff 0, mean 0 (bit-identical required: the rewrites (DIF004) only cache or move data; passed)"
        in body
    )
    assert f"--path={DDPM} --device=emu" in body


def test_every_group_of_a_run_is_verified_through_one_zygote_stopped_when_the_run_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """torch is imported once per bot run, not once per group: each `verify()` gets the run's zygote."""
    handed: list[Zygote] = []

    def recording_verify(src: Path, *, zygote: Zygote, **options: Any) -> None:
        handed.append(zygote)

    monkeypatch.setattr("bot.verify.verify", recording_verify)
    src = tmp_path / "diffusers"  # in no checkout: this interpreter runs its trees
    with pytest.raises(KeyboardInterrupt), real_verifier(tmp_path / "zygotes") as verifier:
        verifier(src, select=("DIF004",))
        verifier(src, select=("DIF005",))
        assert handed[0] is handed[1] and handed[0].python == Path(sys.executable)
        raise KeyboardInterrupt  # an interrupted run stops its zygote too
    assert not handed[0].ready()  # stopped: it never starts again
