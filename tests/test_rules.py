"""The contract every rule keeps: a unique code, complete documentation, examples that hold."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from cli_runner import codemod

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import FixSafety
from codemods.output.rule_docs import rule_sections
from codemods.project.config import ConfigError
from codemods.project.index import installed_diffusers
from codemods.rules import all_rules, rule_class, select_rules
from codemods.rules.base import DOC_SECTIONS
from tools.fixture_cases import all_cases

RULES = all_rules()


def test_codes_are_unique_and_well_formed() -> None:
    codes = [rule.code for rule in RULES]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"DIF\d{3}", code) for code in codes)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_documentation_has_every_section(rule) -> None:
    headings = re.findall(r"^## (.+)$", rule.documentation(), re.MULTILINE)
    assert headings == list(DOC_SECTIONS)
    assert rule.name and rule.summary and all(isinstance(s, FixSafety) for s in rule.fix_safeties)


def _run_snippet(rule, source: str, tmp_path: Path):
    target = tmp_path / "snippet.py"
    target.write_text(source)
    result = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=(rule.code,), jobs=1))
    return result, target.read_text()


@pytest.mark.parametrize(
    ("rule", "source"), [(r, s) for r in RULES for s in r.valid], ids=lambda v: getattr(v, "code", "valid")
)
def test_valid_examples_have_no_finding(rule, source: str, tmp_path: Path) -> None:
    result, after = _run_snippet(rule, source, tmp_path)
    assert result.findings == []
    assert after == source


@pytest.mark.parametrize(
    ("rule", "example"), [(r, e) for r in RULES for e in r.invalid], ids=lambda v: getattr(v, "code", "invalid")
)
def test_invalid_examples_are_found_and_fixed_as_documented(rule, example, tmp_path: Path) -> None:
    result, after = _run_snippet(rule, example.source, tmp_path)
    assert [f.code for f in result.findings] and {f.code for f in result.findings} == {rule.code}
    assert after == (example.fixed if example.fixed is not None else example.source)


def test_every_rule_has_examples() -> None:
    assert all(rule.valid and rule.invalid for rule in RULES)


def test_prefix_selects_every_rule_with_it() -> None:
    assert [r.code for r in select_rules(("DIF00",))] == [r.code for r in RULES if r.code.startswith("DIF00")]


def test_unknown_code_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown rule code or prefix: DIF999"):
        select_rules(("DIF999",))
    with pytest.raises(ConfigError, match="unknown rule code: XYZ"):
        rule_class("XYZ")


def test_the_readme_rule_table_lists_every_rule() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for rule in RULES:
        assert f"| {rule.code} | {rule.name} | {rule.fix_label()} | {rule.summary} |" in readme


@functools.cache
def _fixture_texts() -> list[str]:
    """Every fixture case's input and expected output files."""
    return [text for case in all_cases() for tree in (case.input_files(), case.expected_files()) for text in tree.values()]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_the_cheap_gate_never_rejects_a_file_the_trigger_matches(rule) -> None:
    texts = [*_fixture_texts()]
    texts += [*rule.valid, *(example.source for example in rule.invalid)]
    instance = rule()
    for text in texts:
        for match in rule.trigger.finditer(text):
            assert instance.may_match(match.group(0)), match.group(0)


# A section opens with the label, but "none" reads "No fix: ..." in prose.
_SECTION_OPENING = {"none": "No fix"}


def test_the_rules_table_shows_the_fix_safety_each_rule_documents(tmp_path: Path) -> None:
    table = codemod("rules", cwd=tmp_path).stdout
    rows = {line.split()[0]: line for line in table.splitlines() if line.lstrip().startswith("DIF")}
    for rule in RULES:
        label = rule.fix_label()
        assert rule_sections(rule.code)["Fix safety"].startswith(_SECTION_OPENING.get(label, label.capitalize())), rule.code
        assert rows[rule.code].split(rule.name, 1)[1].strip().startswith(label + "  "), rule.code


def test_every_fixture_finding_has_a_fix_safety_its_rule_declares() -> None:
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    for path in fixtures.glob("DIF*/*.findings.txt"):
        for code, safety in re.findall(r": (DIF\d{3}) \[(safe|unsafe|none)\b", path.read_text()):
            assert safety == "none" or FixSafety(safety) in rule_class(code).fix_safeties, (path.name, code, safety)
