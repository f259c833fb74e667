"""Every fixture under fixtures/<CODE>/ is rewritten exactly as its expected output says.

A case is `name.py` (expected: `name.expected.py`, findings: `name.findings.txt`) or a directory
`name/` with an `input/` tree, an `expected/` tree and `findings.txt`. Each runs with only its
rule selected and unsafe fixes on; a second run must change nothing. `--regen-fixtures`
rewrites the expected files from the current output.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from codemods.engine import Mode, RunOptions, run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# fixtures/<CODE>/ holds a rule's cases; other directories (fixtures/verify/) hold data for other tests.
RULE_DIRECTORY = re.compile(r"^[A-Z]+[0-9]+$")


def _cases() -> list[tuple[str, Path]]:
    found = []
    for rule_dir in sorted(p for p in FIXTURES.iterdir() if p.is_dir() and RULE_DIRECTORY.match(p.name)):
        for case in sorted(rule_dir.iterdir()):
            if case.is_dir() or (case.suffix == ".py" and not case.name.endswith(".expected.py")):
                found.append((rule_dir.name, case))
    return found


def _run(code: str, target: Path):
    return run(RunOptions(paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, select=(code,), jobs=1))


def _render(result, root: Path) -> str:
    lines = []
    for finding in result.findings:
        state = finding.fix_safety.value + (", fixed" if finding.fixed else "")
        line = f"{Path(finding.path).relative_to(root)}:{finding.line}:{finding.column + 1}: {finding.code} [{state}] {finding.message}"
        if finding.not_fixed_reason:
            line += f" (not fixed: {finding.not_fixed_reason})"
        lines.append(line.replace(f"{root}/", ""))
    lines.extend(f"error: {error}".replace(f"{root}/", "") for error in result.errors)
    return "\n".join(lines) + "\n"


def _tree_text(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}


def _expected(case: Path) -> dict[str, str]:
    if case.is_dir():
        return _tree_text(case / "expected")
    return {case.name: case.with_suffix(".expected.py").read_text()}


def _findings_file(case: Path) -> Path:
    return case / "findings.txt" if case.is_dir() else case.with_name(case.stem + ".findings.txt")


def _save_expected(case: Path, root: Path, findings: str) -> None:
    if case.is_dir():
        shutil.rmtree(case / "expected", ignore_errors=True)
        shutil.copytree(root, case / "expected")
    else:
        case.with_suffix(".expected.py").write_text((root / case.name).read_text())
    _findings_file(case).write_text(findings)


@pytest.mark.parametrize(("code", "case"), _cases(), ids=lambda v: v if isinstance(v, str) else v.stem)
def test_fixture(code: str, case: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = tmp_path / "case"
    if case.is_dir():
        shutil.copytree(case / "input", root)
    else:
        root.mkdir()
        shutil.copy(case, root / case.name)
    result = _run(code, root)
    findings = _render(result, root)
    if request.config.getoption("--regen-fixtures"):
        _save_expected(case, root, findings)
    assert _tree_text(root) == _expected(case)
    assert findings == _findings_file(case).read_text()

    fixed = _tree_text(root)
    second = _run(code, root)
    assert _tree_text(root) == fixed, "a second run changed the fixed code"
    assert not second.errors
