"""The fixture-case materialiser (tools/fixture_cases): specs, selections, patches, recording, the CLI.

The cases themselves run in test_fixtures.py; here, what a case author relies on, checked on the
installed diffusers' DDIM scheduler (one module, read, never written).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tools.fixture_cases import Case, CaseError, PatchError, apply_diff, find_case, make_diff
from tools.fixture_cases.record import rerecord
from tools.fixture_cases.selection import SelectionError, selected_lines
from tools.fixture_cases.sources import installed_release, module_text

DDIM = "schedulers/scheduling_ddim.py"


@pytest.fixture(scope="module")
def ddim() -> str:
    return module_text(installed_release()[0], DDIM)


def _take(text: str, *items: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[i] for i in selected_lines(text, list(items), DDIM))


def test_a_zero_context_diff_applies_back_to_the_text_it_was_made_from() -> None:
    before = {"a.py": "one\ntwo\nthree\nfour\n"}
    after = {"a.py": "zero\none\n3\nfour\nfive\n", "pkg/new.py": "x = 1\n"}
    assert apply_diff(before, make_diff(before, after)) == after


def test_a_diff_whose_removed_line_differs_is_refused_with_file_and_line() -> None:
    patch = make_diff({"a.py": "one\ntwo\n"}, {"a.py": "one\n2\n"})
    with pytest.raises(PatchError, match=r"a.py: line 2 is 'TWO', the patch expects 'two'"):
        apply_diff({"a.py": "one\nTWO\n"}, patch, "case.patch")


def test_a_method_comes_with_its_class_header_and_its_copied_from_comment(ddim: str) -> None:
    taken = _take(ddim, "DDIMScheduler._threshold_sample")
    assert taken.startswith("\n\nclass DDIMScheduler(SchedulerMixin, ConfigMixin):\n\n")
    assert "    # Copied from diffusers.schedulers.scheduling_ddpm.DDPMScheduler._threshold_sample\n" in taken
    assert "_get_variance" not in taken
    ast.parse(taken)


def test_imports_and_definitions_are_laid_out_as_in_the_module(ddim: str) -> None:
    taken = _take(ddim, "imports", "DDIMScheduler.scale_model_input", "DDIMScheduler.step")
    tree = ast.parse(taken)
    [scheduler] = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert [f.name for f in scheduler.body if isinstance(f, ast.FunctionDef)] == ["scale_model_input", "step"]
    assert "\n\n    def step(" in taken


def test_a_name_the_module_lacks_is_an_error_naming_it(ddim: str) -> None:
    with pytest.raises(SelectionError, match="'DDIMScheduler' has no member named 'stepp'"):
        _take(ddim, "DDIMScheduler.stepp")


def test_a_line_range_past_the_end_is_an_error(ddim: str) -> None:
    with pytest.raises(SelectionError, match="lines 1-99999 are not within"):
        _take(ddim, "1-99999")


def _case(tmp_path: Path, spec: str) -> Case:
    path = tmp_path / "DIF000" / "case.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f'release = "{installed_release()[0]}"\n{spec}')
    return Case("DIF000/case", path)


def test_an_unknown_spec_key_is_an_error_listing_the_keys(tmp_path: Path) -> None:
    case = _case(tmp_path, '[[file]]\npath = "x.py"\nmodul = "schedulers/scheduling_ddim.py"\n')
    with pytest.raises(CaseError, match=r"unknown key\(s\) \['modul'\]"):
        case.input_files()


def test_a_tree_case_gets_the_packages_its_files_sit_in(tmp_path: Path) -> None:
    case = _case(tmp_path, f'[[file]]\npath = "diffusers/schedulers/ddim.py"\nmodule = "{DDIM}"\ntake = ["imports"]\n')
    assert sorted(case.input_files()) == [
        "diffusers/__init__.py",
        "diffusers/schedulers/__init__.py",
        "diffusers/schedulers/ddim.py",
    ]


def test_recording_an_edited_copy_gives_a_spec_and_patch_that_rebuild_it(tmp_path: Path) -> None:
    case = _case(tmp_path, f'[[file]]\npath = "ddim.py"\nmodule = "{DDIM}"\ncomment = "Ours."\n')
    edited = case.input_text()
    start, end = (
        edited.index("    def _get_variance"),
        edited.index("    # Copied from diffusers.schedulers.scheduling_ddpm"),
    )
    edited = edited[:start] + edited[end:]  # trimmed
    edited = edited.replace("        return sample\n", "        return sample * 1.0  # ours\n", 1)  # changed
    spec, patch = rerecord(case, {"ddim.py": edited})
    case.source.write_text(spec)
    case.patch.write_text(patch)
    assert case.input_text() == edited
    changed = [line for line in patch.splitlines() if line[:1] in "-+" and line[:3] not in ("---", "+++")]
    assert changed == ["-        return sample", "+        return sample * 1.0  # ours"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-m", "tools.fixture_cases", *args], cwd=root, capture_output=True, text=True, check=False
    )


def test_show_prints_the_input_the_expected_change_and_the_findings() -> None:
    case = find_case("DIF004/pndm_delegating_step")
    shown = _cli("show", case.name)
    assert shown.returncode == 0
    assert shown.stdout == (
        f"=== pndm_delegating_step.py (input)\n{case.input_text()}"
        f"=== expected change\n{case.expected_diff.read_text()}"
        f"=== expected findings\n{case.expected_findings.read_text()}"
    )


def test_an_unknown_case_is_a_one_line_error() -> None:
    shown = _cli("show", "DIF004/no_such_case")
    assert (shown.returncode, shown.stdout, len(shown.stderr.splitlines())) == (2, "", 1)
    assert shown.stderr.startswith("error: no fixture case 'DIF004/no_such_case'")
