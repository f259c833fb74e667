"""Parity knows where the arithmetic runs: a 1-ulp difference, for each kind of rule, on each device.

Rules that cache or move data (DIF001, DIF003, DIF004, DIF005) run the same arithmetic on the same
device: bit-identical everywhere. Rules that move arithmetic to the host (DIF002's sigmas, DIF006's
host values) are bit-identical where host and device are both the CPU (emu, cpu), and may differ by
a few ulp on CUDA (the H200 run: DIF002 on FlowMatchHeunDiscreteScheduler, 2.38e-07). Other rules
change arithmetic and are held to --tolerance.
"""

from __future__ import annotations

import pytest
import torch

from bot.verify.judging.verdict import Side, judge, parity_rule
from bot.verify.running.outputs import compare

BEFORE = {"output": torch.tensor([0.5, 3.0, -2.0])}
ONE_ULP = {"output": torch.nextafter(BEFORE["output"], torch.tensor(10.0))}  # 3.0 -> 3.0000002384 (2.38e-07)
FIVE_ULPS_AT_THE_TOP = {"output": BEFORE["output"] + torch.tensor([0.0, 5 * 2.384185791015625e-07, 0.0])}
TOLERANCE = 1e-4

TABLE = [
    # rules, device, a 1-ulp difference passes
    (["DIF001"], "emu", False),
    (["DIF001"], "cpu", False),
    (["DIF001"], "cuda", False),
    (["DIF003", "DIF004", "DIF005"], "cuda", False),
    (["DIF002"], "emu", False),
    (["DIF002"], "cpu", False),
    (["DIF002"], "cuda", True),
    (["DIF006"], "emu", False),
    (["DIF006"], "cuda", True),
    (["DIF001", "DIF006"], "cuda", True),
    (["DIF007"], "emu", True),
    (["DIF007"], "cpu", True),
    (["DIF007"], "cuda", True),
]


@pytest.mark.parametrize(("rules", "device", "passes"), TABLE, ids=[f"{'+'.join(r)}-{d}" for r, d, _ in TABLE])
def test_a_one_ulp_difference_is_judged_by_where_the_arithmetic_runs(
    rules: list[str], device: str, passes: bool
) -> None:
    rule = parity_rule(rules, device, TOLERANCE)
    parity = compare(BEFORE, ONE_ULP, rule.tolerance, rule.ulps, rule.reason)
    side = Side(ok=True, unit="step", totals={"h2d": 1, "d2h": 0, "sync": 1, "outputs": 0})
    verdict = judge(
        rules, side, Side(ok=True, unit="step", totals={"h2d": 0, "d2h": 0, "sync": 1, "outputs": 0}), parity, device
    )
    assert (parity.passed, verdict.verdict == "failed") == (passes, not passes)


def test_host_arithmetic_on_cuda_may_not_move_more_than_four_ulps() -> None:
    rule = parity_rule(["DIF002"], "cuda", TOLERANCE)
    assert not compare(BEFORE, FIVE_ULPS_AT_THE_TOP, rule.tolerance, rule.ulps).passed


def test_the_report_says_which_parity_it_required_and_why() -> None:
    assert parity_rule(["DIF001", "DIF005"], "cuda", TOLERANCE).reason == (
        "bit-identical required: the rewrites (DIF001, DIF005) only cache or move data"
    )
    assert parity_rule(["DIF002"], "emu", TOLERANCE).reason == (
        "bit-identical required: the rewrites (DIF002) move arithmetic to the host,"
        " and on --device emu host and device are both the CPU"
    )
    parity = compare(BEFORE, ONE_ULP, **_rule_args(["DIF002"], "cuda"))
    assert parity.to_dict()["rule"] == (
        "within 4 ulp of each output's dtype at its largest magnitude: the rewrites (DIF002)"
        " move arithmetic from the GPU to the host CPU, which may round the last bit differently"
    )


def _rule_args(rules: list[str], device: str) -> dict[str, object]:
    rule = parity_rule(rules, device, TOLERANCE)
    return {"tolerance": rule.tolerance, "ulps": rule.ulps, "rule": rule.reason}
