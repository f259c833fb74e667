"""The real-scale section of the report and the PR body: the seed's table, before -> after, and a generation's worth.

Figures appear only when they were measured on CUDA; otherwise the section says "not measured at
real scale" and why. Pure text from the report's JSON: no torch.
"""

from __future__ import annotations

from typing import Any

TITLE = "#### At real scale"

HEADER = [
    "case",
    "mode",
    "per",
    "wall ms",
    "GPU ms",
    "host wait ms",
    "syncs over 50 ms (per run)",
    "peak memory (MiB)",
    "first run (s)",
]


def real_scale_lines(section: dict[str, Any] | None) -> list[str]:
    """The Markdown lines of the real-scale section; none when no real-scale run was asked for."""
    if section is None:
        return []
    if not section.get("measured"):
        return [TITLE, "", f"Not measured at real scale: {section.get('why', 'not run on CUDA')}."]
    cases = section.get("cases", [])
    devices = sorted({c["device"] for c in cases if c.get("device")})
    blocks = section.get("scale", {}).get("blocks")
    lines = [
        (
            f"{TITLE} ({', '.join(devices) or 'CUDA'}; random bf16 weights built on the device, at most {blocks} "
            "blocks per stack unless a case says otherwise; medians after a warm-up)"
        ),
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    for case in cases:
        lines += [_row(case, mode) for mode in case["modes"] if _timed(mode["before"]) or _timed(mode["after"])]
    lines += ["", *_built_lines(cases), "", *_generation_lines(cases), "", *_sync_lines(cases)]
    failed = [line for case in cases for line in _failure_lines(case)]
    if failed:
        lines += ["", "Not measured:", *failed]
    if section.get("pending"):
        lines += ["", f"Not reached when this was written: {', '.join(f'`{name}`' for name in section['pending'])}."]
    return lines


def _timed(side: dict[str, Any]) -> bool:
    return "wall_ms_per_unit" in side


def _row(case: dict[str, Any], mode: dict[str, Any]) -> str:
    before, after = mode["before"], mode["after"]
    either = after if _timed(after) else before
    per = either["unit"] + (f" (of {either['units']})" if either.get("units", 1) > 1 else "")
    cells = [
        f"`{case['case']}` ({', '.join(case['rules'])})",
        either.get("how", mode["mode"])
        if before.get("how") == after.get("how") or not (_timed(before) and _timed(after))
        else f"{before.get('how', '–')} → {after.get('how')}",
        per,
        _arrow(before.get("wall_ms_per_unit"), after.get("wall_ms_per_unit")),
        _arrow(before.get("cuda_ms_per_unit"), after.get("cuda_ms_per_unit")),
        _arrow(before.get("host_wait_ms_per_unit"), after.get("host_wait_ms_per_unit")),
        f"{_big(before)} → {_big(after)}",
        _arrow(before.get("peak_memory_mib"), after.get("peak_memory_mib"), digits=0),
        _arrow(_seconds(before.get("cold_ms")), _seconds(after.get("cold_ms")), digits=1),
    ]
    return "| " + " | ".join(cells) + " |"


def _arrow(before: float | None, after: float | None, digits: int = 1) -> str:
    """`before → after`; a side without the figure shows `–` (one that did not run, or not on CUDA)."""
    if before is None and after is None:
        return "–"
    return " → ".join("–" if value is None else f"{value:.{digits}f}" for value in (before, after))


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def _big(side: dict[str, Any]) -> str:
    if "big_syncs" not in side:
        return "–"
    syncs = side["big_syncs"]
    return f"{len(syncs)}, {sum(s['ms'] for s in syncs):.1f} ms"


def _built_lines(cases: list[dict[str, Any]]) -> list[str]:
    lines = ["What each case ran:"]
    for case in cases:
        ran = f"{len(case['rewrites_run'])} of {len(case['rewrites'])} rewrite(s) in its files ran"
        lines.append(
            f"- `{case['case']}`: {case['built']}; built {case.get('blocks') or '?'}; inputs {case.get('input') or '?'}; {ran}."
        )
    return lines


def _generation_lines(cases: list[dict[str, Any]]) -> list[str]:
    lines = ["Over one whole generation (units × the time saved per unit; negative: it costs):"]
    for case in cases:
        for mode in case["modes"]:
            generation = mode.get("generation")
            if not generation:
                continue
            saved = generation["saved_ms"]
            per = mode["after"]["unit"]
            text = f"- `{case['case']}`, {mode['mode']}: {case['generation']}: {generation['units']} {per}s × "
            text += f"{saved['wall'] / generation['units']:.2f} ms = **{saved['wall'] / 1000:.2f} s** wall clock"
            if "cuda" in saved:
                text += f" ({saved['cuda'] / 1000:.2f} s on the GPU's clock)"
            if "host_wait" in saved:
                text += f"; host blocked in syncs {saved['host_wait'] / 1000:.2f} s less"
            if "cold" in saved:
                text += f"; first run (cold compile): {saved['cold'] / 1000:.1f} s"
            lines.append(text)
    return lines if len(lines) > 1 else []


def _sync_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Every sync over 50 ms, as #13406 listed them; where a side had none, its largest host waits instead."""
    lines = ["<details><summary>Syncs over 50 ms, per run (the largest host waits where there were none)</summary>", ""]
    for case in cases:
        for mode in case["modes"]:
            for side in ("before", "after"):
                measured = mode[side]
                if "big_syncs" not in measured:
                    continue
                where = f"`{case['case']}` {mode['mode']}, {side}"
                if measured["big_syncs"]:
                    lines.append(f"- {where}: " + "; ".join(_wait(s) for s in measured["big_syncs"]))
                else:
                    waits = "; ".join(_wait(s) for s in measured["largest_host_waits"]) or "no host wait at all"
                    lines.append(
                        f"- {where}: none over {measured['big_sync_ms']:g} ms; largest host waits: {waits}{_pace(measured)}"
                    )
    return [*lines, "", "</details>"] if len(lines) > 2 else []


def _pace(side: dict[str, Any]) -> str:
    """Why no sync waited: the GPU's busy time per unit against the wall time (the host set the pace when it is lower)."""
    busy, wall = side.get("gpu_busy_ms_per_unit"), side.get("wall_ms_per_unit")
    if busy is None or not wall:
        return ""
    return f"; the GPU was busy {busy:.1f} of {wall:.1f} ms per {side['unit']} ({100 * busy / wall:.0f}%)"


def _wait(sync: dict[str, Any]) -> str:
    return f"{sync['ms']:.1f} ms in `{sync['op']}` at `{sync['site']}`"


TREES = {"before": "original", "after": "rewritten"}


def _failure_lines(case: dict[str, Any]) -> list[str]:
    """Why a side or a mode has no figures; a case measured on one tree only says which (`original only, ...`)."""
    errors = case.get("errors", {})
    if len(errors) == 2 and len(set(errors.values())) == 1:  # the same on both trees, e.g. cut by time
        return [f"- `{case['case']}`: {errors['before']}"]
    lines = []
    for side, error in errors.items():
        other = "after" if side == "before" else "before"
        only = f"{TREES[other]} only, " if any(_timed(mode[other]) for mode in case["modes"]) else ""
        joiner = " " if error.startswith(("not run", "timed out", "worker exited")) else ": "
        lines.append(f"- `{case['case']}`: {only}{TREES[side]}{joiner}{error}")
    for mode in case["modes"]:
        for side in ("before", "after"):
            if "error" in mode[side]:
                lines.append(f"- `{case['case']}` {mode['mode']}, {TREES[side]}: {mode[side]['error']}")
    return lines
