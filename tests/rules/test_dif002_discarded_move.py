"""DIF002 on diffusers 0.25.1's `self.sigmas.to("cpu")`, the move written without its assignment.

The maintainers assigned it in 0.26 (#6708); each case runs the rule on a copy of the real 0.25.1
scheduler file and compares with the 0.26.3 file where the rule rewrites, or checks the reason where
it must not (the per-step count says CPU sigmas would not pay).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from release_files import release_copy, release_text

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import FixSafety
from codemods.project.index import installed_diffusers

MOVE = 'sigmas.to("cpu")'


def _fix(path: Path, unsafe: bool = True):
    return run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.WRITE, unsafe_fixes=unsafe, select=("DIF002",), jobs=1))


def _moves(text: str) -> list[tuple[int, str]]:
    return [(number, line) for number, line in enumerate(text.splitlines(), 1) if MOVE in line]


@pytest.mark.parametrize("module", ["scheduling_euler_discrete.py", "scheduling_lms_discrete.py"])
def test_the_discarded_moves_become_the_maintainers_assignments(module: str, tmp_path: Path) -> None:
    path = release_copy("0.25.1", f"schedulers/{module}", tmp_path)

    result = _fix(path)

    assert all(f.fixed for f in result.findings) and len(result.findings) == 2
    assert _moves(path.read_text()) == _moves(release_text("0.26.3", f"schedulers/{module}"))


def test_the_move_in_init_is_a_safe_no_op_fix(tmp_path: Path) -> None:
    path = release_copy("0.25.1", "schedulers/scheduling_euler_discrete.py", tmp_path)

    result = _fix(path, unsafe=False)

    [init, setter] = sorted(result.findings, key=lambda f: f.line)
    assert init.fixed and init.fix_safety is FixSafety.SAFE and "on the CPU here already" in init.message
    assert not setter.fixed and setter.fix_safety is FixSafety.UNSAFE
    assert "`s_tmin <= sigma <= s_tmax` (line 480) compares it in Python" in setter.message


def test_the_setter_is_left_alone_where_no_step_reads_a_sigma_on_the_host(tmp_path: Path) -> None:
    path = release_copy("0.25.1", "schedulers/scheduling_euler_ancestral_discrete.py", tmp_path)

    result = _fix(path)

    setter = max(result.findings, key=lambda f: f.line)
    assert not setter.fixed and setter.fix is None
    assert setter.not_fixed_reason.startswith("nothing per step reads the sigmas on the host")
    assert 'self.sigmas.to("cpu")' in path.read_text().splitlines()[setter.line - 1]


def test_sigmas_that_never_left_the_host_get_safe_assignments(tmp_path: Path) -> None:
    path = release_copy("0.25.1", "schedulers/scheduling_dpmsolver_multistep.py", tmp_path)

    result = _fix(path, unsafe=False)

    assert [(f.fixed, f.fix_safety) for f in result.findings] == [(True, FixSafety.SAFE)] * 2
    released = release_text("0.26.3", "schedulers/scheduling_dpmsolver_multistep.py")
    assert [line for _, line in _moves(path.read_text())] == [line for _, line in _moves(released)]
