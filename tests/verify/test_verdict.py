"""Verdicts: what each rule must show to be verified, and what fails or regresses a change."""

from __future__ import annotations

from bot.verify.judging.verdict import Side, judge
from bot.verify.running.outputs import Parity

EQUAL = Parity(0.0, 0.0, True, 0.0, True, "")


def _side(unit: str = "forward", units: int = 1, repeated: int | None = None, **totals: int) -> Side:
    blocks = None if repeated is None else {"declared": ["Block"] if repeated else [], "found": repeated}
    return Side(ok=True, unit=unit, units=units, totals=totals, repeated_blocks=blocks)


def test_a_copy_that_goes_away_with_equal_outputs_is_verified() -> None:
    judgement = judge(["DIF001"], _side(h2d=2, d2h=0, sync=0), _side(h2d=1, d2h=0, sync=0), EQUAL, "emu")
    assert judgement.verdict == "verified"


def test_counts_that_stay_the_same_are_no_gain() -> None:
    judgement = judge(["DIF005"], _side(h2d=1, d2h=0, sync=2), _side(h2d=1, d2h=0, sync=2), EQUAL, "emu")
    assert (judgement.verdict, judgement.error) == ("no-gain", "no evidence for DIF005")


def test_more_copies_and_syncs_in_total_is_a_regression() -> None:
    judgement = judge(["DIF001"], _side(h2d=1, d2h=0, sync=0), _side(h2d=0, d2h=0, sync=2), EQUAL, "emu")
    assert (judgement.verdict, judgement.error) == (
        "regressed",
        "copies and syncs per forward 1 -> 2 (h2d 1 -> 0, sync 0 -> 2)",
    )


def test_one_kind_up_while_the_total_goes_down_is_a_named_trade_off() -> None:
    # DIF002: sigmas moved to the CPU once per call (a D2H) instead of a sync on every step.
    before, after = _side("step", 7, h2d=1, d2h=0, sync=16), _side("step", 7, h2d=1, d2h=1, sync=2)
    judgement = judge(["DIF002"], before, after, EQUAL, "emu")
    assert judgement.verdict == "verified"
    assert judgement.notes == ("trade-off: d2h per step 0 -> 0.1429 while copies and syncs together went down",)


def test_more_output_objects_is_a_regression() -> None:
    judgement = judge(["DIF004"], _side(outputs=1), _side(outputs=2), EQUAL, "emu")
    assert (judgement.verdict, judgement.error) == ("regressed", "output objects per forward 1 -> 2")


def test_counts_are_compared_per_step() -> None:
    before, after = _side("step", 4, h2d=8, d2h=0, sync=2), _side("step", 4, h2d=8, d2h=0, sync=0)
    assert judge(["DIF005"], before, after, EQUAL, "emu").verdict == "verified"
    assert after.per_unit() == {"h2d": 2.0, "d2h": 0.0, "sync": 0.0}


def test_different_outputs_fail_the_change() -> None:
    differs = Parity(0.5, 0.01, False, 0.0, False, "differs in output[0]")
    judgement = judge(["DIF001"], _side(h2d=2), _side(h2d=0), differs, "emu")
    assert (judgement.verdict, judgement.error) == ("failed", "outputs differ (max abs diff 0.5): differs in output[0]")


def test_a_rewritten_tree_that_raises_fails_the_change() -> None:
    broken = Side(ok=False, error="TypeError: forward() got an unexpected keyword argument 'return_dict'")
    judgement = judge(["DIF004"], _side(outputs=2), broken, None, "emu")
    assert judgement.verdict == "failed"
    assert judgement.error.startswith("the rewritten tree fails: TypeError")


def test_output_objects_are_dif004s_evidence() -> None:
    judgement = judge(["DIF004"], _side(h2d=0, outputs=3), _side(h2d=0, outputs=1), EQUAL, "emu")
    assert judgement.verdict == "verified"
    assert judge(["DIF004"], _side(outputs=1), _side(outputs=1), EQUAL, "emu").verdict == "no-gain"


def test_dif004_with_compile_needs_the_fullgraph_check_to_pass() -> None:
    before = _side(outputs=2)
    failing = Side(
        ok=True,
        unit="forward",
        totals={"outputs": 0},
        compile={"fullgraph": {"status": "failed", "detail": "graph break"}},
    )
    judgement = judge(["DIF004"], before, failing, EQUAL, "emu")
    assert (judgement.verdict, judgement.notes) == ("no-gain", ("DIF004: fullgraph compile fails: graph break",))


def test_a_compile_check_that_passed_before_and_fails_after_is_a_regression() -> None:
    before = Side(ok=True, unit="forward", totals={"outputs": 2}, compile={"fullgraph": {"status": "passed"}})
    after = Side(
        ok=True, unit="forward", totals={"outputs": 0}, compile={"fullgraph": {"status": "failed", "detail": "x"}}
    )
    assert judge(["DIF004"], before, after, EQUAL, "emu").verdict == "regressed"


def test_dif003_is_verified_by_blocks_found_where_none_were() -> None:
    assert judge(["DIF003"], _side(repeated=0, h2d=0), _side(repeated=2, h2d=0), EQUAL, "emu").verdict == "verified"
    assert judge(["DIF003"], _side(repeated=2), _side(repeated=2), EQUAL, "emu").verdict == "no-gain"


def test_dif003_on_a_pipelines_controlnet_is_judged_on_the_controlnet() -> None:
    def pipeline(controlnet_blocks: int) -> Side:
        transformer = {"declared": ["Block"], "found": 4}
        controlnet = {"declared": ["Block"] if controlnet_blocks else [], "found": controlnet_blocks}
        by_class = {"FluxTransformer2DModel": transformer, "FluxControlNetModel": controlnet}
        return Side(ok=True, unit="step", repeated_blocks={**transformer, "by_class": by_class})

    before, after = (pipeline(n).judged_on({"FluxControlNetModel"}) for n in (0, 2))
    assert (before.repeated_blocks, after.repeated_blocks["found"]) == ({"declared": [], "found": 0}, 2)
    assert judge(["DIF003"], before, after, EQUAL, "emu").verdict == "verified"
    assert pipeline(0).judged_on({"SomethingElse"}).repeated_blocks["found"] == 4


def test_census_rules_on_the_cpu_are_unverified_not_verified() -> None:
    judgement = judge(["DIF001"], _side(outputs=0), _side(outputs=0), EQUAL, "cpu")
    assert (judgement.verdict, judgement.error) == ("unverified", "no census on --device cpu: parity only (passed)")


def test_every_rule_of_a_target_needs_its_own_evidence() -> None:
    before, after = _side(h2d=0, d2h=0, sync=2, outputs=2), _side(h2d=0, d2h=0, sync=0, outputs=2)
    judgement = judge(["DIF004", "DIF005"], before, after, EQUAL, "emu")
    assert (judgement.verdict, judgement.error) == ("no-gain", "no evidence for DIF004")

