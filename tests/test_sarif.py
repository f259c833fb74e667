"""SARIF for code scanning: each proved fix's replacement text, and each rule's `codemod explain` text as help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import codemod

from codemods.output.sarif_fixes import replacements
from tools.fixture_cases import find_case

ADAPTER = find_case("DIF004/adapter_denoising_loop")


def apply_replacements(text: str, changes: list[dict]) -> str:
    """What a SARIF consumer does with `replacements`: lines and UTF-16 columns, 1-based, applied bottom-up."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        position, units = starts[line - 1], 0
        while units < column - 1:
            units += len(text[position].encode("utf-16-le")) // 2
            position += 1
        return position

    for change in reversed(changes):
        region = change["deletedRegion"]
        start = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        text = text[:start] + change["insertedContent"]["text"] + text[end:]
    return text


@pytest.fixture(scope="module")
def adapter_sarif(tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("sarif")
    (work / "pipeline.py").write_text(ADAPTER.input_text())
    done = codemod("run", "--check", "--format", "sarif", "pipeline.py", cwd=work)
    assert done.returncode == 1, done.stderr  # findings remain: exit 1, as with text output
    assert (work / "pipeline.py").read_text() == ADAPTER.input_text()  # --check writes nothing
    return json.loads(done.stdout)


def test_each_fixed_finding_carries_its_replacement_text(adapter_sarif: dict) -> None:
    results = adapter_sarif["runs"][0]["results"]

    fixes = [result.get("fixes") for result in results]

    assert [fix is not None for fix in fixes] == [True, False, True]  # the **kwargs call has no fix
    [change] = fixes[2][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "pipeline.py"
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 45, "startColumn": 1, "endLine": 45, "endColumn": 81},
            "insertedContent": {
                "text": "        image = self.vae.decode(latents / self.vae.config.scaling_factor, return_dict=False)[0]"
            },
        }
    ]


def test_applying_every_suggestion_gives_the_fixed_file(adapter_sarif: dict) -> None:
    changes = [
        replacement
        for result in adapter_sarif["runs"][0]["results"]
        for fix in result.get("fixes", [])
        for change in fix["artifactChanges"]
        for replacement in change["replacements"]
    ]

    fixed = apply_replacements(ADAPTER.input_text(), changes)

    assert fixed == ADAPTER.expected_text()


def test_rule_help_is_what_codemod_explain_prints(adapter_sarif: dict, tmp_path: Path) -> None:
    rules = adapter_sarif["runs"][0]["tool"]["driver"]["rules"]
    rule = next(rule for rule in rules if rule["id"] == "DIF004")

    explained = codemod("explain", "DIF004", cwd=tmp_path).stdout

    assert rule["help"] == {"text": explained, "markdown": explained}
    assert rule["helpUri"].endswith("/codemods/rules/output_attribute_access.py")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),  # one line replaced
        ("a\nb\n", "x\na\nb\n"),  # inserted before the first line
        ("a\nb\n", "a\nb\nz\n"),  # appended after the last line
        ("a\nb\nc\n", "a\n"),  # the last lines removed
        ("a\nb", "a\nB\n"),  # a last line without a line break
        ("é😀 = 1\nx\n", "é😀 = 2\nx\n"),  # columns count UTF-16 code units
    ],
    ids=["replace", "insert-first", "append", "remove-last", "no-final-break", "utf16"],
)
def test_replacements_rebuild_the_new_text_within_the_old_lines(before: str, after: str) -> None:
    changes = replacements(before, after)

    assert apply_replacements(before, changes) == after
    last_line = len(before.splitlines())
    assert all(c["deletedRegion"]["endLine"] <= last_line for c in changes)


def test_utf16_columns_count_a_surrogate_pair_as_two() -> None:
    [change] = replacements("é😀 = 1\n", "é😀 = 2\n")

    assert change["deletedRegion"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 8}
