"""Coverage of a verification run: changes by verdict, per rule, and the unverified ones by kind of reason."""

from __future__ import annotations

from bot.verify.judging.coverage import OTHER, coverage_of, reason_kind

REPORT = {
    "rewrites": {
        "a.py:1": ["DIF003"],
        "b.py:3": ["DIF004"],
        "b.py:9": ["DIF005"],
        "c.py:5": ["DIF005"],
        "d.py:7": ["DIF004"],
    },
    "targets": [
        {"target": "SD3Transformer2DModel", "rules": ["DIF003"], "rewrites": ["a.py:1"], "verdict": "verified"},
        {
            "target": "FluxPipeline",
            "rules": ["DIF004", "DIF005"],
            "rewrites": ["b.py:3", "b.py:9"],
            "verdict": "verified",
        },
        {
            "target": "KolorsPipeline",
            "rules": ["DIF005"],
            "rewrites": ["c.py:5"],
            "verdict": "unverified",
            "error": "needs the Hub: its target tests/x.py::T loads org/chatglm (no offline stand-in)",
        },
        {
            "target": "AutoencoderKLCosmos",
            "rules": ["DIF004"],
            "rewrites": ["d.py:7"],
            "verdict": "unverified",
            "error": "tests/y.py::C ran AutoencoderKLCosmos but not these lines (a path its inputs do not take)",
        },
        {"target": "FluxImg2ImgPipeline", "rules": ["DIF004"], "rewrites": ["b.py:3"], "verdict": "no-gain"},
    ],
}


def test_changes_are_counted_by_verdict_and_share_with_a_verdict() -> None:
    coverage = coverage_of(REPORT)
    assert (dict(coverage.changes), coverage.total, coverage.with_verdict) == (
        {"verified": 3, "unverified": 2},
        5,
        0.6,
    )


def test_each_change_counts_under_its_own_rules() -> None:
    by_rule = coverage_of(REPORT).by_rule
    assert {rule: dict(counts) for rule, counts in by_rule.items()} == {
        "DIF003": {"verified": 1},
        "DIF004": {"verified": 1, "unverified": 1},
        "DIF005": {"verified": 1, "unverified": 1},
    }


def test_a_change_several_targets_ran_counts_once_with_the_strongest_verdict() -> None:
    assert coverage_of(REPORT).changes["no-gain"] == 0
    failing = {**REPORT, "targets": [*REPORT["targets"], {**REPORT["targets"][-1], "verdict": "failed"}]}
    assert dict(coverage_of(failing).changes) == {"verified": 2, "failed": 1, "unverified": 2}


def test_an_older_report_takes_the_rules_of_its_changes_from_elsewhere() -> None:
    older = {"targets": REPORT["targets"]}
    assert coverage_of(older, REPORT["rewrites"]).by_rule == coverage_of(REPORT).by_rule


def test_unverified_changes_are_counted_by_kind_of_reason() -> None:
    assert dict(coverage_of(REPORT).reasons) == {"needs the Hub": 1, "inputs take another path": 1}


def test_reasons_the_verifier_gives_fall_into_their_kinds() -> None:
    assert reason_kind("its target tests/a.py::T cannot run here: ImportError: x") == (
        "target cannot run in this environment"
    )
    assert reason_kind("no target builds or reaches FooPipeline") == "no target builds the class"
    assert reason_kind("tests/a.py::T ran it without driving what decides whether the loop steps: skip (line 3)") == (
        "loop-shaping arguments not driven"
    )
    assert reason_kind("something new") == OTHER


def test_the_markdown_table_has_a_row_per_rule_and_the_total() -> None:
    rows = coverage_of(REPORT).to_markdown().splitlines()
    assert rows[2] == "| DIF003 | 1 | 0 | 0 | 0 | 0 | 100% |"
    assert rows[5] == "| **all** | 3 | 0 | 0 | 0 | 2 | 60% |"  # a change counts once in all
    assert "| needs the Hub | 1 |" in rows
