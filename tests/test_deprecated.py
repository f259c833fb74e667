"""`pipelines/deprecated/` takes no changes (diffusers' policy): skipped by default, counted, opt-in by config, never for the bot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run
from codemods.output import report
from codemods.project.config import ConfigError
from codemods.rules.output_attribute_access import OutputAttributeAccess

SOURCE, FIXED = OutputAttributeAccess.invalid[0].source, OutputAttributeAccess.invalid[0].fixed


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """`src/diffusers` with one live pipeline and one deprecated one, each with a safe DIF004 fix."""
    package = tmp_path / "src" / "diffusers"
    for directory in (package, package / "pipelines", package / "pipelines" / "deprecated"):
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "__init__.py").write_text("")
    (package / "pipelines" / "live.py").write_text(SOURCE)
    (package / "pipelines" / "deprecated" / "old.py").write_text(SOURCE)
    return tmp_path


def _deprecated(checkout: Path) -> Path:
    return checkout / "src" / "diffusers" / "pipelines" / "deprecated" / "old.py"


def _live_copy_of(checkout: Path, cited: str) -> tuple[Path, str]:
    """The live pipeline, marked `# Copied from diffusers.<cited>`, and its text."""
    live = checkout / "src" / "diffusers" / "pipelines" / "live.py"
    copied = SOURCE.replace("class Pipe:", f"# Copied from diffusers.{cited}\nclass Pipe:")
    live.write_text(copied)
    return live, copied


def test_deprecated_pipelines_are_skipped_by_default_and_counted(checkout: Path) -> None:
    result = run(RunOptions(paths=(checkout / "src",), jobs=1))
    assert _deprecated(checkout).read_text() == SOURCE
    assert (checkout / "src" / "diffusers" / "pipelines" / "live.py").read_text() == FIXED
    assert [Path(f.path).name for f in result.findings] == ["live.py"]
    assert result.summary()["skipped"] == [
        {
            "reason": "diffusers accepts no changes to pipelines/deprecated/",
            "findings": 1,
            "files": 1,
            "include_with": "[tool.codemod] include-deprecated = true",
        }
    ]


def test_a_deprecated_file_named_on_the_command_line_is_still_skipped(checkout: Path) -> None:
    result = run(RunOptions(paths=(_deprecated(checkout),), jobs=1))
    assert (result.findings, len(result.skipped)) == ([], 1)
    assert _deprecated(checkout).read_text() == SOURCE


def test_the_configuration_opts_back_in(checkout: Path) -> None:
    (checkout / "pyproject.toml").write_text("[tool.codemod]\ninclude-deprecated = true\n")
    result = run(RunOptions(paths=(checkout / "src",), jobs=1))
    assert result.skipped == []
    assert _deprecated(checkout).read_text() == FIXED


def test_the_bot_option_wins_over_the_configuration(checkout: Path) -> None:
    (checkout / "pyproject.toml").write_text("[tool.codemod]\ninclude-deprecated = true\n")
    result = run(RunOptions(paths=(checkout / "src",), mode=Mode.DIFF, include_deprecated=False, jobs=1))
    assert [Path(p).name for p in result.changes] == ["live.py"]


def test_a_fix_whose_copy_lives_in_deprecated_is_declined_with_the_reason(checkout: Path) -> None:
    copied = SOURCE.replace("class Pipe:", "# Copied from diffusers.pipelines.live.Pipe\nclass Pipe:")
    _deprecated(checkout).write_text(copied)
    result = run(RunOptions(paths=(checkout / "src",), jobs=1))
    (live,) = result.findings
    assert not live.fixed
    assert live.not_fixed_reason.endswith("may not change (diffusers accepts no changes to pipelines/deprecated/)")
    assert _deprecated(checkout).read_text() == copied


def test_a_copy_of_deprecated_code_cited_with_a_slash_is_declined_with_the_reason(checkout: Path) -> None:
    # As diffusers main's AnimateDiff SDXL cites `pipelines.deprecated.text_to_video_synthesis/pipeline_...`:
    # check_copies joins the parts into a path, so the slash names the same module.
    live, copied = _live_copy_of(checkout, "pipelines.deprecated/old.Pipe")
    (finding,) = run(RunOptions(paths=(checkout / "src",), jobs=1)).findings
    assert not finding.fixed
    assert finding.not_fixed_reason.endswith("may not change (diffusers accepts no changes to pipelines/deprecated/)")
    assert live.read_text() == copied


def test_the_reason_names_the_findings_own_copy_and_not_a_sibling_copy(checkout: Path) -> None:
    # As diffusers main's AnimateDiff SparseCtrl and SDXL both copy a deprecated `decode_latents`:
    # each one's decline names its own file, not the sibling that sorts first.
    sibling = checkout / "src" / "diffusers" / "pipelines" / "alpha.py"
    sibling.write_text(
        SOURCE.replace("class Pipe:", "# Copied from diffusers.pipelines.deprecated.old.Pipe\nclass Pipe:")
    )
    live, _ = _live_copy_of(checkout, "pipelines.deprecated.old.Pipe")
    findings = run(RunOptions(paths=(checkout / "src",), jobs=1)).findings
    reasons = {Path(f.path).name: f.not_fixed_reason for f in findings}
    assert reasons["live.py"].startswith(
        f"`Pipe` in {live.relative_to(checkout)} is `# Copied from` `Pipe` in {_deprecated(checkout).relative_to(checkout)};"
    )


def test_a_copy_whose_source_the_tree_does_not_define_is_declined_with_the_reason(checkout: Path) -> None:
    live, copied = _live_copy_of(checkout, "pipelines.gone.Pipe")
    (finding,) = run(RunOptions(paths=(checkout / "src",), jobs=1)).findings
    assert finding.not_fixed_reason == (
        f"`Pipe` in {live.relative_to(checkout)} is `# Copied from` `diffusers.pipelines.gone.Pipe`, which this tree does not define, "
        "so a change there cannot be shown to keep the copy"
    )
    assert live.read_text() == copied


def test_the_text_summary_says_how_many_were_skipped_and_why(checkout: Path) -> None:
    result = run(RunOptions(paths=(checkout / "src",), mode=Mode.CHECK, jobs=1))
    assert report.summary_notes(result) == [
        "skipped 1 finding(s) in 1 file(s): diffusers accepts no changes to pipelines/deprecated/ "
        "(`[tool.codemod] include-deprecated = true` to include them)"
    ]


def test_the_json_summary_carries_the_skipped_count(checkout: Path) -> None:
    result = run(RunOptions(paths=(checkout / "src",), mode=Mode.CHECK, jobs=1))
    assert json.loads(report.as_json(result))["summary"]["skipped"][0]["findings"] == 1


def test_a_non_boolean_setting_is_a_clear_error(checkout: Path) -> None:
    (checkout / "pyproject.toml").write_text('[tool.codemod]\ninclude-deprecated = "yes"\n')
    with pytest.raises(ConfigError, match=r"\[tool.codemod\] include-deprecated must be true or false$"):
        run(RunOptions(paths=(checkout / "src",), jobs=1))


def test_the_bot_never_proposes_there_whatever_the_configuration_says(checkout: Path) -> None:
    from bot.groups import find_groups

    (checkout / "pyproject.toml").write_text("[tool.codemod]\ninclude-deprecated = true\n")
    grouping = find_groups(checkout, ("DIF004",))
    assert [path for group in grouping.groups for path in group.files] == ["src/diffusers/pipelines/live.py"]
