"""The cycle collector paused for the length of a run (the main process's; the workers never run it)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    # A run builds millions of objects that all live to its end (every file's scan, the index): each full
    # collection walks all of them again and frees none, 0.3 s of a cold check of a diffusers checkout in this
    # process alone, all of it between the workers' scans and the report. What cycles a run makes are few and
    # small (fixes are planned and applied on values); they are collected once the collector is back.
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
