"""The parent's side of the real-scale run: both trees' workers, one after the other, and their pairing.

Each tree runs every case in its own worker process (`runner.run_tree`: a case that crashes or
hangs costs only itself), the original tree first, so the two never share a process or the GPU
at the same time. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.verify.changes import ChangeSet
from bot.verify.plan import exercised
from bot.verify.protocol import WorkerRequest
from bot.verify.real_scale.cases import cases_for, get_case
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.runner import run_tree

DEFAULT_SCALE = Scale()

CASE_TIMEOUT_S = 240.0
"""How long one case may run in one tree (build, cold run, timed runs, profile, compiled modes)."""


def not_measured(why: str) -> dict[str, Any]:
    return {"measured": False, "why": why, "cases": []}


def real_scale_section(
    changes: ChangeSet, device: str, work_dir: Path, python: Path | None, say: Callable[[str], None]
) -> dict[str, Any]:
    """`verify --scale real`: the cases that run the changed files, on CUDA; elsewhere, why there are no figures."""
    if device != "cuda":
        return not_measured(
            f"--device {device} runs nothing at real size (timings there would not be a GPU's); "
            "the real-scale run needs --device cuda"
        )
    cases = cases_for(set(changes.changed_files))
    if not cases:
        return not_measured(f"no real-scale case runs the changed files ({', '.join(changes.changed_files)})")
    return run_real_scale(changes, [case.name for case in cases], device, work_dir, python=python, say=say)


def run_real_scale(
    changes: ChangeSet,
    names: list[str],
    device: str,
    work_dir: Path,
    scale: Scale = DEFAULT_SCALE,
    python: Path | None = None,
    say: Callable[[str], None] = lambda message: None,
    timeout_s: float = CASE_TIMEOUT_S,
) -> dict[str, Any]:
    """Every case run in `names` (`Case` or `Case@options`) on both trees of `changes`, paired before -> after."""
    sides = []
    for label, package in (("original", changes.original), ("rewritten", changes.rewritten)):
        # Both trees trace the same files in their first run, so neither's first-run time carries more tracing.
        trace = sorted(str(package / path) for path in changes.changed_files)
        say(f"real scale: {len(names)} case(s) in the {label} tree ({device})")
        request = WorkerRequest(str(package), device, list(names), str(work_dir / label), trace, scale=scale.to_dict())
        results = run_tree(request, timeout_s=timeout_s, python=python)
        for result in results:
            outcome = f"done in {result.get('seconds', 0):.0f} s" if result.get("ok") else result.get("error", "")[:300]
            say(f"real scale: {label}: {result['target']}: {outcome}")
        sides.append(results)
    cases = [pair(name, before, after, changes) for name, before, after in zip(names, *sides, strict=True)]
    section = {"measured": device == "cuda", "device": device, "scale": scale.to_dict(), "cases": cases}
    if device != "cuda":
        section["why"] = f"run on {device}, whose timings say nothing about a GPU's (the machinery only)"
    return section


def pair(name: str, before: dict[str, Any], after: dict[str, Any], changes: ChangeSet) -> dict[str, Any]:
    """One case's two sides as the report keeps them: per mode before -> after, and what a generation saves."""
    case = get_case(CaseRun.parse(name).case)
    mine = [r for r in changes.rewrites if r.path in case.files]
    ran = [r.where for r in mine if exercised(r, after.get("lines", {}), after.get("functions", {}))]
    errors = {
        side: result.get("error") for side, result in (("before", before), ("after", after)) if not result.get("ok")
    }
    modes_before = {mode["mode"]: mode for mode in before.get("modes", [])}
    modes = []
    for mode in after.get("modes", []):
        earlier = modes_before.get(mode["mode"], {})
        modes.append(
            {
                "mode": mode["mode"],
                "before": earlier,
                "after": mode,
                "generation": _generation(case.generation_units, earlier, mode),
            }
        )
    return {
        "case": name,
        "rules": list(case.rules),
        "built": case.built,
        "blocks": (after.get("described") or before.get("described") or {}).get("blocks"),
        "input": (after.get("described") or before.get("described") or {}).get("input"),
        "device": after.get("device") or before.get("device"),
        "generation": case.generation,
        "rewrites": [r.where for r in mine],
        "rewrites_run": ran,
        "modes": modes,
        "errors": errors,
    }


def _generation(units: int | None, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """Units in one generation and the milliseconds the change saves over them (negative: it costs)."""
    if not before.get("wall_ms_per_unit") or not after.get("wall_ms_per_unit"):
        return None
    count = units or after["units"]
    saved = {"wall": (before["wall_ms_per_unit"] - after["wall_ms_per_unit"]) * count}
    if before.get("cuda_ms_per_unit") is not None and after.get("cuda_ms_per_unit") is not None:
        saved["cuda"] = (before["cuda_ms_per_unit"] - after["cuda_ms_per_unit"]) * count
    if before.get("host_wait_ms_per_unit") is not None and after.get("host_wait_ms_per_unit") is not None:
        # What #13406 added up: the host's time blocked in syncs, which the wall clock shows only where the GPU idled.
        saved["host_wait"] = (before["host_wait_ms_per_unit"] - after["host_wait_ms_per_unit"]) * count
    if after["mode"] != "eager":  # a compiled generation pays its cold compile once
        saved["cold"] = before["cold_ms"] - after["cold_ms"]
    return {"units": count, "saved_ms": {key: round(value, 1) for key, value in saved.items()}}
