"""Two Python-level observers a census cannot give: which rewritten lines ran, and output objects built.

`LineCoverage` records the lines executed in chosen files (during the warm-up run), so a
rewrite is credited to a target only if the target actually ran it. `OutputCensus` counts
diffusers `BaseOutput` dataclasses built (what DIF004 removes), with the line that built each.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from bot.verify.census.result import relative_to_roots
from bot.verify.census.statement_sites import call_site


class LineCoverage:
    """Lines run in `files` (absolute paths) while active, and the functions they ran in."""

    def __init__(self, files: Iterable[str | Path]) -> None:
        self.files = {str(Path(f)) for f in files} | {str(Path(f).resolve()) for f in files}
        self.lines: dict[str, set[int]] = {}
        self.functions: dict[str, set[str]] = {}
        self._previous: Any = None

    def __enter__(self) -> LineCoverage:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        sys.settrace(self._previous)

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        if filename not in self.files:
            return None
        self.functions.setdefault(filename, set()).add(frame.f_code.co_qualname)
        lines = self.lines.setdefault(filename, set())
        lines.add(frame.f_lineno)

        def on_line(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                lines.add(frame.f_lineno)
            return on_line

        return on_line

    def by_relative_path(self, roots: list[Path]) -> tuple[dict[str, list[int]], dict[str, list[str]]]:
        def relative(path: str) -> str:
            return relative_to_roots(path, roots) or path

        lines = {relative(path): sorted(found) for path, found in self.lines.items()}
        functions = {relative(path): sorted(found) for path, found in self.functions.items()}
        return lines, functions


class OutputCensus:
    """Counts `BaseOutput` instances built while active, by the line under `site_roots` that built them."""

    def __init__(self, site_roots: list[Path]) -> None:
        self.site_roots = tuple(site_roots)  # hashable: call_site caches per file
        self.sites: Counter[str] = Counter()
        self._active = False
        self._installed = False

    def install(self) -> None:
        """Wrap `BaseOutput.__post_init__` (every output dataclass runs it) once per process."""
        from diffusers.utils.outputs import BaseOutput

        original = BaseOutput.__post_init__
        census = self

        def counted_post_init(output: Any) -> None:
            if census._active:
                census.sites[call_site(census.site_roots, sys._getframe(1))] += 1
            original(output)

        BaseOutput.__post_init__ = counted_post_init
        self._installed = True

    def __enter__(self) -> OutputCensus:
        if not self._installed:
            self.install()
        self.sites.clear()
        self._active = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._active = False

    @property
    def count(self) -> int:
        return sum(self.sites.values())

