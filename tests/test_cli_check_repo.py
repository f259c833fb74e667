"""`codemod run --check-repo`: the checkout's own repository checks, run before and after the write."""

from __future__ import annotations

from pathlib import Path

from cli_pipeline import CASE, PIPELINE, pipeline_fixture  # noqa: F401  (the `pipeline` fixture)
from cli_runner import codemod

CHECK_SAMPLE = """\
# A check of our own, in the shape of diffusers' utils/check_*.py: it fails on what the fix writes.
import pathlib
import sys

if ").sample\\n" not in pathlib.Path("src/pipeline.py").read_text():
    sys.exit("src/pipeline.py: the UNet's output is no longer read as `.sample`")
"""


def test_check_repo_runs_the_checkouts_checks_before_and_after_and_names_the_one_the_write_broke(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pipeline.py").write_text(PIPELINE)
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "check_sample.py").write_text(CHECK_SAMPLE)
    (tmp_path / "Makefile").write_text("repo-consistency:\n\tpython utils/check_sample.py\n")
    result = codemod("run", "--check-repo", "src/pipeline.py", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / "src" / "pipeline.py").read_text() == CASE.expected_text()
    assert (
        "❌ repository checks: 1 run, 1 broken by the change (python utils/check_sample.py)\n\n"
        "`python utils/check_sample.py` (Makefile: repo-consistency) passes on the original tree and fails on the "
        "rewritten one:\n\n```\nsrc/pipeline.py: the UNet's output is no longer read as `.sample`\n```\n"
    ) in result.stderr


def test_check_repo_outside_a_checkout_is_a_one_line_error(pipeline: Path) -> None:
    result = codemod("run", "--check-repo", str(pipeline), cwd=pipeline.parent)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"codemod: error: {pipeline}: no checkout above it (a folder with src/ and a Makefile or .github/workflows/); "
        "--check-repo needs the repository's own checks\n"
    )
    assert pipeline.read_text() == PIPELINE
