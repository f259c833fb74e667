"""The parent's side of the real-scale run: both trees' workers, case by case, and their pairing.

Each case runs in both trees at once, each side in its own worker process (`runner.run_tree`),
taking turns on the device through a lock, so the two never share a process or measure at the
same time, and a run cut short keeps every side that finished. No torch here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from bot.verify.planning.changes import ChangeSet
from bot.verify.planning.plan import exercised
from bot.verify.real_scale.cases import cases_for, get_case
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.running.protocol import WorkerRequest
from bot.verify.running.runner import run_tree

DEFAULT_SCALE = Scale()

CASE_TIMEOUT_S = 240.0
"""How long one case may take on both trees (worker start-up, then each tree's build, cold run, timed runs,
profile and compiled modes, in turn)."""

CUT_BY_TIME = "not run: cut by time"
NOT_RUN_YET = "not run yet"


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
    deadline: float | None = None,
    progress: Callable[[dict[str, Any]], None] = lambda section: None,
    caps: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Every case run in `names` (`Case` or `Case@options`) on both trees of `changes`, paired before -> after.

    Case by case: both trees' workers start at once (their start-up, about 13 s on the H200, overlaps)
    and take turns on the device through a lock, so a case's pair is done before the next case
    starts, and every finished side is kept: `progress` gets the section at the start and after
    each side (cases not reached yet are listed as `pending`). A case may take `caps[name]` seconds, else
    `timeout_s`; one that would start with less than that left before `deadline`
    (time.monotonic) is not run, and says so (CUT_BY_TIME).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    sides: dict[str, dict[str, dict[str, Any]]] = {}
    trees = {"original": changes.original, "rewritten": changes.rewritten}
    # Handed out before the first case too: a run stopped there still shows what it was on.
    progress(_section(changes, names, sides, device, scale))
    for index, name in enumerate(names):
        cap = (caps or {}).get(name, timeout_s)
        if deadline is not None and deadline - time.monotonic() < cap:
            sides[name] = {label: {"target": name, "ok": False, "error": CUT_BY_TIME} for label in trees}
            say(f"real scale: {name}: {CUT_BY_TIME}")
            progress(_section(changes, names, sides, device, scale))
            continue
        with ThreadPoolExecutor(max_workers=2) as pool:
            running = {
                pool.submit(
                    _one_side, changes, name, work_dir / f"{index:03d}-{label}", package, device, scale, python, cap
                ): label
                for label, package in trees.items()
            }
            for done in as_completed(running):
                label, result = running[done], done.result()
                outcome = (
                    f"done in {result.get('seconds', 0):.0f} s" if result.get("ok") else result.get("error", "")[:300]
                )
                say(f"real scale: {label}: {name}: {outcome}")
                sides.setdefault(name, {})[label] = result
                progress(_section(changes, names, sides, device, scale))
    return _section(changes, names, sides, device, scale)


def _one_side(
    changes: ChangeSet,
    name: str,
    out_dir: Path,
    package: Path,
    device: str,
    scale: Scale,
    python: Path | None,
    timeout_s: float,
) -> dict[str, Any]:
    """One case run in one tree's own worker (a case that crashes or hangs costs only itself); the lock in
    `out_dir`'s parent keeps the other tree's worker off the device while this one measures."""
    # Both trees trace the same files in their first run, so neither's first-run time carries more tracing.
    trace = sorted(str(package / path) for path in changes.changed_files)
    lock = str(out_dir.parent / "measure.lock")
    request = WorkerRequest(str(package), device, [name], str(out_dir), trace, scale=scale.to_dict(), measure_lock=lock)
    return run_tree(request, timeout_s=timeout_s, python=python)[0]


def _section(
    changes: ChangeSet, names: list[str], sides: dict[str, dict[str, dict[str, Any]]], device: str, scale: Scale
) -> dict[str, Any]:
    """The section as far as it has run: each case with a side done, paired; the rest pending."""
    not_yet = {"ok": False, "error": NOT_RUN_YET}
    cases = [
        pair(name, sides[name].get("original", not_yet), sides[name].get("rewritten", not_yet), changes)
        for name in names
        if name in sides
    ]
    section = {"measured": device == "cuda", "device": device, "scale": scale.to_dict(), "cases": cases}
    pending = [name for name in names if name not in sides]
    if pending:
        section["pending"] = pending
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
    modes_after = {mode["mode"]: mode for mode in after.get("modes", [])}
    modes = []
    for name_of_mode in dict.fromkeys([*modes_before, *modes_after]):  # a side that did not run keeps the other's
        earlier, later = modes_before.get(name_of_mode, {}), modes_after.get(name_of_mode, {})
        modes.append(
            {
                "mode": name_of_mode,
                "before": earlier,
                "after": later,
                "generation": _generation(case.generation_units, earlier, later),
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
