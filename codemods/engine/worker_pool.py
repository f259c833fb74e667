"""Jobs run in a pool of forked worker processes: drained when all are done, stopped at once otherwise.

On an interrupt (or an abort) `shutdown(wait=True)` would first run every queued job, seconds on a
whole tree, so the pool is cancelled and its workers terminated instead. Ctrl-C reaches the whole
process group; the workers ignore it and the run (the parent) decides what it means.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import active_children, get_context

from codemods.engine.interrupts import interrupts_deferred
from codemods.errors import RunAborted


def in_workers(function: Callable, jobs: list, workers: int, phase: str) -> Iterator:
    """`function` over `jobs` in `workers` processes, the results in the jobs' order."""
    chunk = max(1, min(8, len(jobs) // (workers * 16)))
    earlier_children = set(active_children())
    pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=_quiet_worker)
    finished = False
    try:
        # The workers are forked as the jobs are submitted; a KeyboardInterrupt raised in a fork's clean-up
        # callbacks would be printed and dropped, so Ctrl-C waits the milliseconds until they are.
        with interrupts_deferred():
            results = pool.map(function, jobs, chunksize=chunk)
        yield from results
        finished = True
    except BrokenProcessPool:
        raise RunAborted(
            f"a worker process died in the {phase} phase (out of memory, or a crash in the parser); nothing was written"
        ) from None
    finally:
        if finished:
            pool.shutdown()
        else:
            pool.shutdown(wait=False, cancel_futures=True)
            for worker in set(active_children()) - earlier_children:
                worker.terminate()


def _quiet_worker() -> None:
    # A scan makes no reference cycles (a test holds it to that), so reference counting frees every
    # tree and the cycle collector would only cost time.
    import gc
    import signal

    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
