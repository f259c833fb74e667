"""Every fixture case under fixtures/<CODE>/ is rewritten exactly as its expected change says.

A case takes its diffusers code at test time (tools/fixture_cases: a spec naming the release, the
modules and what to take, plus our patch) or is a snippet we wrote. Each runs with only its rule
selected and unsafe fixes on; the change must equal `<case>.diff`, the findings `<case>.findings.txt`,
and a second run must change nothing. `--regen-fixtures` rewrites both expected files from the
current output; `python -m tools.fixture_cases show CODE/name` prints a case before and after.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers
from tools.fixture_cases import Case, all_cases, find_case, make_diff, write_files
from tools.fixture_cases.sources import module_text


def _run(code: str, target: Path, cache: Path):
    # A case is a few diffusers modules taken out of their package: the classes they use are looked up in the
    # installed diffusers, as `codemod run --context` does.
    options = RunOptions(
        paths=(target,),
        mode=Mode.WRITE,
        unsafe_fixes=True,
        select=(code,),
        jobs=1,
        context=installed_diffusers(),
        cache_dir=cache,
    )
    return run(options)


@pytest.fixture(scope="module")
def scan_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scan cache for the cases of a worker, as a user's runs share theirs: the installed diffusers' modules that
    a case's classes lead to are parsed once, not in each of the two runs of every case."""
    return tmp_path_factory.mktemp("scan-cache")


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


@pytest.mark.parametrize("case", all_cases(), ids=lambda case: case.name)
def test_fixture(case: Case, tmp_path: Path, scan_cache: Path, request: pytest.FixtureRequest) -> None:
    # The second run gets the cache as it was before the first: it scans the fixed files itself, rather than reading
    # the scans the first run made of them while checking its fixes.
    cache_before = shutil.copytree(scan_cache, tmp_path / "cache")
    before = case.input_files()
    root = write_files(before, tmp_path / "case")
    result = _run(case.rule, root, scan_cache)
    change, findings = make_diff(before, _tree_text(root)), _render(result, root)
    if request.config.getoption("--regen-fixtures"):
        case.expected_diff.write_text(change)
        case.expected_findings.write_text(findings)
    assert change == case.expected_diff.read_text()
    assert findings == case.expected_findings.read_text()

    fixed = _tree_text(root)
    second = _run(case.rule, root, cache_before)
    assert _tree_text(root) == fixed, "a second run changed the fixed code"
    assert not second.errors


def test_the_rewrite_of_qwenimage_before_13406_is_the_module_that_pr_merged() -> None:
    # The case is 0.42.1's module with #13406 reverted by our patch; our fix must give 0.42.1's module back.
    case = find_case("DIF001/qwenimage_rope_pr13406")
    module = "models/transformers/transformer_qwenimage.py"
    assert case.expected_files()[f"diffusers/{module}"] == module_text("0.42.1", module)
