"""`--path` and `--only` as users type them: relative to where they stand, absolute, or relative to the tree.

The tree is a checkout laid out as diffusers' (`src/diffusers/...`), copied from installed diffusers
0.42.1 with one pipeline, DDPM's (the package still imports: the others load only when asked for); the
commands run from its root, as a PR body's "Reproduce" lines are pasted.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from installed_trees import copy_installed_diffusers

from bot.github.body import reproduce_command
from bot.groups import Grouping, find_groups
from codemods.engine.cache import CACHE_DIRECTORY_NAME
from codemods.errors import UsageError
from codemods.project.tree_paths import inside_tree

DDPM = "pipelines/ddpm/pipeline_ddpm.py"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # These tests are about paths: each run on the whole tree read the facts of ~500 files for DIF004's
    # resolution, most of them pipelines that do not run DDPM's models.
    root = tmp_path_factory.mktemp("checkout")
    copy_installed_diffusers(root / "src", pipelines=("ddpm",))
    return root


@pytest.mark.parametrize("typed", ["src/diffusers/" + DDPM, DDPM, "ABSOLUTE"])
def test_a_path_relative_to_the_current_directory_absolute_or_inside_the_tree_names_one_file(
    checkout: Path, typed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(checkout)
    given = str(checkout / "src" / "diffusers" / DDPM) if typed == "ABSOLUTE" else typed
    assert inside_tree(Path("src/diffusers"), given, "--path") == PurePosixPath(DDPM)


@pytest.mark.parametrize("typed", ["/etc/passwd", "src/diffusers/nope.py", "../outside"])
def test_a_path_that_names_nothing_inside_the_tree_is_refused_with_the_accepted_forms(
    checkout: Path, typed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(checkout)
    with pytest.raises(UsageError) as refused:
        inside_tree(Path("src/diffusers"), typed, "--path")
    assert str(refused.value) == (
        f"--path {typed}: no such file or directory inside src/diffusers; give it relative to the current"
        " directory, as an absolute path, or relative to src/diffusers"
    )


def _codemod(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "codemod_cli", *arguments], cwd=cwd, env=environment, capture_output=True, text=True
    )


def test_verify_with_a_path_outside_the_tree_is_one_line_and_exit_2(checkout: Path) -> None:
    finished = _codemod(["verify", "src/diffusers", "--path", "/etc/passwd", "--device", "cpu"], checkout)
    assert (finished.returncode, finished.stdout, finished.stderr.count("\n")) == (2, "", 1)
    assert finished.stderr.startswith("codemod: error: --path /etc/passwd: no such file or directory inside")


def test_run_takes_paths_relative_to_the_current_directory(checkout: Path) -> None:
    finished = _codemod(["run", "--check", "--no-cache", "--select", "DIF004", "src/diffusers/" + DDPM], checkout)
    assert finished.returncode == 1  # findings remain, none written
    assert finished.stdout.startswith(f"src/diffusers/{DDPM}:125:28: DIF004 [*]")


def _groups(checkout: Path, only: str) -> Grouping:
    # In the cache that `codemod` run in the checkout keeps (no pyproject.toml or .git above it): these tests are
    # about paths, and each cold run read again the facts of every file that DIF004's resolution asks for.
    return find_groups(checkout, ("DIF004",), only=(only,), cache_dir=checkout / CACHE_DIRECTORY_NAME)


def test_bot_only_takes_paths_from_the_checkout_root_or_inside_src_diffusers(checkout: Path) -> None:
    from_root = _groups(checkout, "src/diffusers/pipelines/ddpm")
    inside = _groups(checkout, "pipelines/ddpm")
    assert [g.files.keys() for g in from_root.groups] == [g.files.keys() for g in inside.groups]
    assert [list(g.files) for g in inside.groups] == [[f"src/diffusers/{DDPM}"]]


def test_bot_only_outside_the_package_is_refused_in_one_line(checkout: Path) -> None:
    with pytest.raises(UsageError, match=r"^--only /etc: no such file or directory inside .*/src/diffusers; give"):
        find_groups(checkout, ("DIF004",), only=("/etc",))


def test_the_reproduce_line_of_a_pr_body_runs_as_printed_from_the_checkout_root(checkout: Path) -> None:
    [group] = _groups(checkout, "pipelines/ddpm").groups
    verify_line = reproduce_command(group, "0" * 40, "emu").splitlines()[-1]
    assert verify_line == f"codemod verify src/diffusers --select=DIF004 --path=src/diffusers/{DDPM} --device=emu"
    finished = _codemod(shlex.split(verify_line)[1:], checkout)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "| `DDPMPipeline` | DIF004 |" in finished.stdout and "✅ verified" in finished.stdout
