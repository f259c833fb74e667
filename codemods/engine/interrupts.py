"""Ctrl-C during a run: never lost, and never cutting a commit in half.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. Raised inside a
fork's clean-up callbacks (the process pool starting its workers) it is printed and dropped, and
the run would go on as if never interrupted. `interrupts_deferred` holds it back until a block ends
(the pool's start, a commit's renames: milliseconds), then raises it; `InterruptWatch` remembers
any other and raises it again at the run's next checkpoint.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class InterruptWatch:
    """SIGINT as KeyboardInterrupt, remembered: `check()` raises it again if it was swallowed."""

    def __init__(self) -> None:
        self.received = False
        self._previous: object = None

    def __enter__(self) -> InterruptWatch:
        # Only the main thread can set a handler, and only it receives KeyboardInterrupt anyway.
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, _signum: int, _frame: FrameType | None) -> None:
        self.received = True
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.received:
            raise KeyboardInterrupt

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """SIGINT held until the block ends, then raised as KeyboardInterrupt: a commit is finished, never cut.

    A handler, not a signal mask: the kernel may deliver a process's SIGINT to any thread that does
    not block it (a progress bar's), and Python then raises it in the main thread all the same.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives KeyboardInterrupt
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
