"""The report both censuses produce: host<->device copies and host waits, by site.

Shared by the emulated census (``census.py``) and the CUDA profile census
(``cuda_census.py``) so that their results compare field by field. Pure data:
no torch import.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("h2d", "d2h", "sync")
"""h2d: host-to-device copy; d2h: device-to-host copy; sync: the host waits for the device."""

COPY_KINDS = ("h2d", "d2h")

UNKNOWN_SITE = "<unknown>"


@dataclass(frozen=True)
class CensusEvent:
    kind: str
    op: str
    """The user-level op, as the profiler names it: ``aten::_local_scalar_dense``, or a CUDA call."""
    site: str
    """``relative/file.py:LINE`` under a site root, else the innermost frame outside torch."""
    bytes: int = 0
    duration_ms: float | None = None
    """Only from a CUDA profile: host time blocked (sync) or GPU copy time (h2d, d2h)."""


@dataclass(frozen=True)
class SiteCounts:
    site: str
    counts: dict[str, int]


@dataclass(frozen=True)
class CensusResult:
    counts: dict[str, int]
    bytes: dict[str, int]
    sites: list[SiteCounts]
    events: list[CensusEvent]
    durations_ms: dict[str, float] | None = None
    """Total per kind; only from a CUDA profile."""
    big_syncs: list[CensusEvent] = field(default_factory=list)
    """Host waits longer than the threshold; only from a CUDA profile."""
    sync_debug_warnings: int | None = None
    """Warnings from ``torch.cuda.set_sync_debug_mode("warn")``; only from a CUDA run."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(
    events: Sequence[CensusEvent],
    *,
    timed: bool = False,
    big_syncs: Iterable[CensusEvent] = (),
) -> CensusResult:
    """Counts, bytes and per-site counts of ``events``; totals of durations when ``timed``."""
    counts = Counter(event.kind for event in events)
    by_site: dict[str, Counter[str]] = defaultdict(Counter)
    for event in events:
        by_site[event.site][event.kind] += 1
    # Busiest sites first; ties by file, then line number.
    ordered = sorted(by_site.items(), key=lambda item: (-sum(item[1].values()), *_file_and_line(item[0])))
    durations = None
    if timed:
        durations = {kind: round(sum(e.duration_ms or 0.0 for e in events if e.kind == kind), 6) for kind in KINDS}
    return CensusResult(
        counts={kind: counts[kind] for kind in KINDS},
        bytes={kind: sum(e.bytes for e in events if e.kind == kind) for kind in COPY_KINDS},
        sites=[SiteCounts(site, {kind: c[kind] for kind in KINDS if c[kind]}) for site, c in ordered],
        events=list(events),
        durations_ms=durations,
        big_syncs=list(big_syncs),
    )


def _file_and_line(site: str) -> tuple[str, int]:
    path, _, line = site.rpartition(":")
    return (path, int(line)) if line.isdigit() else (site, 0)


def relative_to_roots(path: str, roots: Sequence[Path]) -> str | None:
    """``path`` relative to the first root it lies under, or None.

    An absolute path (a Python frame) must lie inside the root. A relative
    path is how torch's profiler writes frames (relative to a ``sys.path``
    entry, e.g. ``diffusers/schedulers/x.py``); it lies under a root whose
    last components start it (root ``.../src/diffusers``).
    """
    if os.path.isabs(path):
        for root in roots:
            root_text = str(root)
            if path.startswith(root_text.rstrip(os.sep) + os.sep):
                return Path(os.path.relpath(path, root_text)).as_posix()
        return None
    parts = Path(path).parts
    for root in roots:
        root_parts = Path(root).parts
        for length in range(min(len(root_parts), len(parts) - 1), 0, -1):
            if root_parts[-length:] == parts[:length]:
                return Path(*parts[length:]).as_posix()
    return None
