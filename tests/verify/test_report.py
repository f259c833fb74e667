"""The report: JSON per target, the PR Markdown, the exit code; and the CUDA census's path into it."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch

from bot.verify.census.cuda import census_from_chrome_trace
from bot.verify.checkout.own_tests import OwnTests
from bot.verify.checkout.repo_checks import CheckResult, RepoChecks
from bot.verify.judging.target_result import target_result
from bot.verify.judging.verdict import Side
from bot.verify.planning.changes import ChangeSet, Rewrite
from bot.verify.reporting.report import TargetResult, VerifyReport
from bot.verify.running import worker
from bot.verify.targets import TargetSpec
from bot.verify.targets.workload import Workload
from codemods.engine.entry import Mode, RunResult

TRACE = json.loads((Path(__file__).parent / "data" / "cuda_trace.json").read_text())
ROOT = Path("/opt/diffusers/src/diffusers")
SCHEDULER = "schedulers/scheduling_flow_match_euler_discrete.py"


def _report(*results: TargetResult, device: str = "emu") -> VerifyReport:
    versions = {"torch": "2.13.0", "diffusers": "0.42.1"}
    return VerifyReport("src/diffusers", device, ["DIF001"], versions, ["models/x.py"], list(results))


def _verified() -> TargetResult:
    return TargetResult(
        "QwenImageTransformer2DModel",
        ["DIF001"],
        ["models/x.py:236"],
        "verified",
        kind="model",
        unit="forward",
        units=1,
        before={"h2d": 2.0, "d2h": 0.0, "sync": 0.0, "outputs": 0.0},
        after={"h2d": 1.0, "d2h": 0.0, "sync": 0.0, "outputs": 0.0},
        parity={
            "max_abs_diff": 0.0,
            "mean_abs_diff": 0.0,
            "exact": True,
            "tolerance": 0.0,
            "passed": True,
            "detail": "",
        },
        site_changes=[{"site": "models/x.py:287", "after_site": None, "before": {"h2d": 1}, "after": {}}],
    )


def test_exit_code_is_zero_unless_something_regressed_or_failed() -> None:
    unverified = TargetResult("Rope", ["DIF001"], ["models/y.py:3"], "unverified", "no target builds or reaches Rope")
    no_gain = TargetResult("Other", ["DIF005"], ["p.py:9"], "no-gain", kind="pipeline")
    assert _report(_verified(), unverified, no_gain).exit_code() == 0
    assert _report(_verified(), TargetResult("Bad", ["DIF001"], [], "failed", "boom", kind="model")).exit_code() == 1
    assert _report(TargetResult("Up", ["DIF001"], [], "regressed", kind="model")).exit_code() == 1


def test_json_carries_counts_sites_parity_verdict_and_versions() -> None:
    document = json.loads(json.dumps(_report(_verified()).to_json()))
    assert document["summary"] == {"verified": 1, "no-gain": 0, "regressed": 0, "failed": 0, "unverified": 0}
    assert document["versions"] == {"torch": "2.13.0", "diffusers": "0.42.1"}
    target = document["targets"][0]
    assert (target["target"], target["rules"], target["rewrites"], target["verdict"]) == (
        "QwenImageTransformer2DModel",
        ["DIF001"],
        ["models/x.py:236"],
        "verified",
    )
    assert (target["before"]["h2d"], target["after"]["h2d"], target["parity"]["max_abs_diff"]) == (2.0, 1.0, 0.0)


def test_markdown_has_the_before_after_table_parity_sites_and_command() -> None:
    unverified = TargetResult("Rope", ["DIF001"], ["models/y.py:3"], "unverified", "no target builds or reaches Rope")
    markdown = _report(_verified(), unverified).to_markdown("codemod verify src/diffusers --select=DIF001")
    assert (
        "| `QwenImageTransformer2DModel` | DIF001 | forward | **2 → 1** | 0 → 0 | 0 → 0 | 0 → 0 "
        "| 0 (bit-identical) | ✅ verified |"
    ) in markdown
    assert "- `QwenImageTransformer2DModel`: max abs diff 0, mean 0 (bit-identical required; passed)" in markdown
    assert "- `models/x.py:287`: 1 h2d → none" in markdown
    assert "| `Rope` | DIF001 | `models/y.py:3` | no target builds or reaches Rope |" in markdown
    assert markdown.rstrip().endswith("```\ncodemod verify src/diffusers --select=DIF001\n```")


def _without_scheduler_lookup(trace: dict) -> dict:
    """The same profile after the fix: index_for_timestep's nonzero and item (ops 7 and 9) are gone."""
    kept = [e for e in trace["traceEvents"] if e.get("args", {}).get("External id") not in (7, 9)]
    return {**trace, "traceEvents": kept}


def _cuda_side(trace: dict, outputs_file: Path, monkeypatch: pytest.MonkeyPatch) -> Side:
    """One side measured through the worker's CUDA path, the profiler replaced by a recorded trace."""

    def profile(run, site_roots, trace_path):
        run()
        return census_from_chrome_trace(trace, site_roots)

    monkeypatch.setattr(worker, "run_cuda_census", profile)
    workload = Workload(run=lambda: torch.ones(2), unit="step", units=2)
    census, output = worker.take_census(
        "cuda", workload, [ROOT], outputs_file.with_suffix(".json"), contextlib.nullcontext()
    )
    torch.save({"output": output}, outputs_file)
    result = {"ok": True, "unit": "step", "units": 2, "census": census, "outputs_file": str(outputs_file)}
    return Side.from_result({**result, "lines": {f"{SCHEDULER}": [360]}, "outputs_built": {"count": 0, "sites": {}}})


def test_a_cuda_profile_reaches_the_report_with_durations_and_big_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _cuda_side(TRACE, tmp_path / "before.pt", monkeypatch)
    after = _cuda_side(_without_scheduler_lookup(TRACE), tmp_path / "after.pt", monkeypatch)
    rewrite = Rewrite(SCHEDULER, 360, 360, ("DIF005",), "FlowMatchEulerDiscreteScheduler", "x", frozenset({360}), False)
    changes = ChangeSet(ROOT, ROOT, [rewrite], RunResult(Mode.WRITE, [], 1))
    spec = TargetSpec("FlowMatchEulerDiscreteScheduler", "scheduler", ("FlowMatchEulerDiscreteScheduler",), "", print)
    result = target_result(spec, before, after, changes, "cuda", 1e-4)
    assert (result.verdict, result.before["sync"], result.after["sync"]) == ("verified", 1.5, 0.5)
    assert result.durations_ms["before"]["sync"] == 77.03
    markdown = _report(result, device="cuda").to_markdown("codemod verify src/diffusers --device=cuda")
    assert (
        "| **1.5 → 0.5** | 0 → 0 | 77.0 → 2.0 | 2 → 1, 164.0 ms → 89.0 ms | 0 (bit-identical) | ✅ verified |"
        in markdown
    )
    assert f"- `{SCHEDULER}:360`: 2 sync → none" in markdown


def test_what_fails_on_the_original_tree_is_named_once_at_the_end_grouped_by_cause() -> None:
    hub = "OSError: We couldn't connect to 'https://huggingface.co' to load the files."
    tests = OwnTests(["tests/test_x.py"], "pytest tests/test_x.py", passed=3)
    tests.failing_before = [
        {"test": f"tests/test_x.py::T::test_{n}", "after": "failed", "message": hub} for n in range(15)
    ]
    checks = RepoChecks(
        [
            CheckResult("python utils/check_repo.py", "Makefile: repo-consistency", "failed", "failed", "ImportError"),
            CheckResult("ruff check src/diffusers/models/x.py", "Makefile: quality", "passed", "passed"),
        ]
    )
    report = _report(_verified())
    report.own_tests, report.repo_checks = tests, checks
    markdown = report.to_markdown("codemod verify src/diffusers")
    assert markdown.endswith(
        "Failing on the original tree too, so not counted:\n\n"
        "- 15 tests need the Hugging Face Hub, which this runner cannot reach (the runner's, not the code's): "
        "`tests/test_x.py::T::test_0`, `tests/test_x.py::T::test_1`, `tests/test_x.py::T::test_2` (+12 more)\n"
        "- 1 repository check(s) fail on the original tree too (the checkout's, not the change's): "
        "`python utils/check_repo.py`\n\nReproduce:\n\n```\ncodemod verify src/diffusers\n```\n"
    )
    assert markdown.count("check_repo.py") == 1
    assert markdown.count("huggingface") == 0


def test_a_test_failing_on_the_original_tree_that_passes_with_the_change_is_named_apart() -> None:
    tests = OwnTests(["tests/test_x.py"], "pytest tests/test_x.py")
    tests.failing_before = [{"test": "tests/test_x.py::T::test_a", "after": "passed", "message": "AssertionError"}]
    report = _report(_verified())
    report.own_tests = tests
    assert "- `tests/test_x.py::T::test_a` fails on the original tree, passed with the change\n" in report.to_markdown(
        "codemod verify src/diffusers"
    )
