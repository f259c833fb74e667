"""A group whose change breaks one of diffusers' own tests or repository checks is not published, whatever its
targets measured."""

from __future__ import annotations

from pathlib import Path

from bot_harness import FakeReport, FakeTarget

from bot.groups import FixGroup
from bot.verification import verify_group
from bot.verify.checkout.own_tests import OwnTests
from bot.verify.checkout.repo_checks import CheckResult, RepoChecks

BROKEN = {"test": "tests/models/test_ops.py::OpsFastTests::test_scale", "message": "assert 5 == 6"}


def _verify(tmp_path: Path, own_tests: OwnTests) -> tuple[str, str]:
    group = FixGroup("DIF004", ("models/ops",), {"src/diffusers/ops.py": ("a = 1\n", "a = 2\n")}, ())
    report = FakeReport([FakeTarget("Ops", ["DIF004"], ["ops.py:1"], "verified")], ["ops.py"], own_tests=own_tests)
    verification = verify_group(
        lambda src, **options: report, tmp_path, group, device="emu", work_dir=tmp_path, compile=False, reproduce=""
    )
    return verification.verdict, verification.reason


def test_a_test_broken_by_the_change_fails_the_group_with_its_id_and_assertion(tmp_path: Path) -> None:
    own_tests = OwnTests(["tests/models/test_ops.py"], "python -m pytest tests/models/test_ops.py", 3, broken=[BROKEN])
    assert _verify(tmp_path, own_tests) == (
        "failed",
        "diffusers' own test tests/models/test_ops.py::OpsFastTests::test_scale passes before the change and fails "
        "after: assert 5 == 6",
    )


def test_tests_already_failing_before_the_change_do_not_stop_the_group(tmp_path: Path) -> None:
    own_tests = OwnTests(["tests/models/test_ops.py"], "python -m pytest tests/models/test_ops.py", 3)
    own_tests.failing_before.append({**BROKEN, "after": "failed"})
    assert _verify(tmp_path, own_tests) == ("verified", "1 of 1 target(s) verified")


def test_a_repository_check_broken_by_the_change_fails_the_group_with_the_checks_output(tmp_path: Path) -> None:
    output = "src/diffusers/ops.py:3: scale is not a copy of diffusers.base.scale\nRun `make fix-copies` to fix them."
    checks = RepoChecks(
        [CheckResult("python utils/check_copies.py", "Makefile: repo-consistency", "passed", "failed", output)]
    )
    group = FixGroup("DIF004", ("models/ops",), {"src/diffusers/ops.py": ("a = 1\n", "a = 2\n")}, ())
    report = FakeReport([FakeTarget("Ops", ["DIF004"], ["ops.py:1"], "verified")], ["ops.py"], repo_checks=checks)
    verification = verify_group(
        lambda src, **options: report, tmp_path, group, device="emu", work_dir=tmp_path, compile=False, reproduce=""
    )
    assert (verification.verdict, verification.reason) == (
        "failed",
        (
            "the repository check `python utils/check_copies.py` passes before the change and fails after: "
            "src/diffusers/ops.py:3: scale is not a copy of diffusers.base.scale Run `make fix-copies` to fix them."
        ),
    )
