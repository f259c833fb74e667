"""What the command line says when there is nothing to do, where each kind of output goes, and its small commands."""

from __future__ import annotations

import difflib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from cli_runner import codemod

from tools.fixture_cases import find_case

PROJECT = Path(__file__).resolve().parent.parent

CASE = find_case("DIF004/adapter_denoising_loop")  # 3 findings: 2 fixed, 1 left (a `**kwargs` call)


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "pipeline.py"
    path.write_text(CASE.input_text())
    return path


@pytest.mark.parametrize("content", ["an empty directory", "no Python file"])
def test_a_directory_without_python_files_is_an_error_not_a_clean_pass(tmp_path: Path, content: str) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    if content == "no Python file":
        (tree / "README.md").write_text("# notes\n")
    result = codemod("run", "--check", "tree", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "codemod: error: tree: no Python files here; give a file or a directory holding *.py files\n"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--select", ""], "select: none; ignore: none"),
        (["--select", "DIF004", "--ignore", "DIF004"], "select: DIF004; ignore: DIF004"),
    ],
)
def test_an_empty_rule_selection_is_an_error_not_a_clean_pass(pipeline: Path, args: list[str], said: str) -> None:
    result = codemod("run", "--check", *args, "pipeline.py", cwd=pipeline.parent)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"codemod: error: the rule selection is empty ({said}): name at least one rule that `codemod rules` lists\n"
    )


def test_a_stopped_run_and_a_file_that_fails_share_one_error_prefix(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def broken(:\n")
    file_error = codemod("run", "--check", "broken.py", cwd=tmp_path)
    usage_error = codemod("run", "--check", "missing.py", cwd=tmp_path)
    assert file_error.stderr.splitlines()[0] == "codemod: error: broken.py:1: syntax error: invalid syntax"
    assert usage_error.stderr == "codemod: error: missing.py: no such file or directory\n"


def test_diff_prints_only_the_patch_on_stdout_and_counts_what_it_fixes_and_leaves(pipeline: Path) -> None:
    result = codemod("run", "--diff", "pipeline.py", cwd=pipeline.parent)
    assert result.returncode == 1
    before, after = (text.splitlines(keepends=True) for text in (CASE.input_text(), CASE.expected_text()))
    assert result.stdout == "".join(difflib.unified_diff(before, after, "a/pipeline.py", "b/pipeline.py"))
    lines = result.stderr.splitlines()
    # The two fixed findings at their input lines; the one left at its line once the diff is applied (42 before).
    assert [line.split(": ")[0] for line in lines[:3]] == ["pipeline.py:29:30", "pipeline.py:43:27", "pipeline.py:45:17"]
    assert lines[3] == "1 file(s) would change: the diff fixes 2 of 3 finding(s), 1 remain; 1 file(s) scanned."


def test_after_a_write_the_remaining_findings_show_the_lines_of_the_written_file(pipeline: Path) -> None:
    written = codemod("run", "pipeline.py", cwd=pipeline.parent)
    recheck = codemod("run", "--check", "pipeline.py", cwd=pipeline.parent)
    assert written.stdout.split(": DIF004")[0] == "pipeline.py:43:27"  # 42:27 before the fix above it
    assert written.stdout == recheck.stdout


def test_version_prints_the_version_and_the_checkouts_commit_without_importing_torch(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT, capture_output=True, text=True).stdout.strip()
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codemod_cli", "--version"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stdout.startswith(f"codemod {version('diffusers-codemod')} (commit {head}")
    assert not [line for line in result.stderr.splitlines() if line.rstrip().endswith("| torch")]


def test_explain_takes_the_rule_name_that_rules_lists(tmp_path: Path) -> None:
    by_name = codemod("explain", "constant-device-copy", cwd=tmp_path)
    by_code = codemod("explain", "DIF001", cwd=tmp_path)
    assert by_name.returncode == 0 and by_name.stdout.startswith("# DIF001 constant-device-copy\n")
    assert by_name.stdout == by_code.stdout
