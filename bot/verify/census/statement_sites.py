"""The statement a copy or sync comes from: one rule for both censuses, and its mark in a CUDA profile.

A site is ``relative/file.py:LINE``: the innermost Python frame under a site root (a diffusers
tree), at the line it is executing; else the innermost frame outside torch and this verifier.
The emulated census asks for it at each op (``call_site``). A CUDA profile cannot give it:
torch's profiler names a Python frame ``file.py(LINE): name`` with LINE the line its function
*starts* on (the frame is recorded when it is entered), and its event tree knows the calling
line only for calls of built-in functions (``torch.equal(...)``), never for an operator, an
``if`` on a tensor or an indexing (their ``aten::`` op hangs off the frame itself). So the line
is written into the profile: while the CUDA census runs, ``StatementSites`` (a
``TorchFunctionMode``) wraps each torch call (functions, methods, operators, ``__bool__``,
``__index__``, ``__repr__``...) in a ``record_function`` named ``SITE_MARK + site``; a runtime call
inside such a span belongs to that statement (``cuda_census`` reads it back).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from bot.verify.census.result import UNKNOWN_SITE, relative_to_roots

SITE_MARK = "codemod_site "
"""The prefix of the ``record_function`` names that carry a site in a profile."""

_MACHINERY_DIRS = (str(Path(torch.__file__).parent) + os.sep, str(Path(__file__).parent) + os.sep)
"""Frames here are never a site: torch itself, and this verifier."""


def site_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """Each root as given and resolved: Python names files by the path it imported them from."""
    both_spellings = [spelling for root in roots for spelling in (Path(root).absolute(), Path(root).resolve())]
    return tuple(dict.fromkeys(both_spellings))


def call_site(roots: tuple[Path, ...], frame: FrameType | None) -> str:
    """The innermost frame from `frame` outwards under a root, else the innermost outside torch and this package."""
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        relative = _relative_file(filename, roots)
        if relative is not None:
            return f"{relative}:{frame.f_lineno}"
        if fallback is None and not filename.startswith(_MACHINERY_DIRS):
            fallback = f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return fallback or UNKNOWN_SITE


@functools.lru_cache(maxsize=8192)
def _relative_file(filename: str, roots: tuple[Path, ...]) -> str | None:
    """`relative_to_roots`, once per file: it runs for every frame of every op."""
    return relative_to_roots(filename, roots)


class StatementSites(TorchFunctionMode):
    """Marks every torch call in a profile with the statement it comes from (see the module's docstring)."""

    def __init__(self, roots: Sequence[str | Path]) -> None:
        super().__init__()
        self.roots = site_roots(roots)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") == "__get__":  # attribute reads (`.shape`, `.dtype`) neither copy nor wait
            return func(*args, **kwargs)
        # What `torch.profiler.record_function` does, without its Python frames in the profile.
        mark = torch.ops.profiler._record_function_enter_new(SITE_MARK + call_site(self.roots, sys._getframe(1)), None)
        try:
            return func(*args, **kwargs)
        finally:
            torch.ops.profiler._record_function_exit._RecordFunction(mark)
