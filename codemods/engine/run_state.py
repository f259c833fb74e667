"""What the fix loop and the fixer ask of the run they serve (`entry`'s run): its state and its services.

The run calls the fix loop, which calls back into the run to rescan, resolve and map work over the
process pool. This protocol is that contract, so `fix_loop` and `fixing` never import `entry`: no
import circle, and no private class named across modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from codemods.engine.cache import ScanCache
    from codemods.engine.run_result import RunOptions
    from codemods.engine.scan import Scan
    from codemods.findings import FileError, Finding
    from codemods.project.files import SourceText
    from codemods.project.index import ProjectIndex


class EngineRun(Protocol):
    options: RunOptions
    in_run: frozenset[str]  # every file of the run
    frozen: set[str]  # files never changed: findings there are only counted
    originals: dict[str, SourceText]  # files a fix touches, as read before fixing
    cache: ScanCache
    used_cache_keys: set[str]
    pyproject: Path | None  # the target's, where its formatter is pinned

    @property
    def writes(self) -> bool: ...

    def split_frozen(self, findings: list[Finding]) -> tuple[list[Finding], list[Finding]]: ...

    def scan_texts(self, texts: dict[str, str]) -> dict[str, Scan]: ...

    def map(self, function: Callable, jobs: list, phase: str, already: int = 0, total: int = 0) -> Iterator: ...

    def resolve(self, scans: Iterable[Scan], index: ProjectIndex, errors: dict[str, FileError]) -> list[Finding]: ...

    def wanted(self, finding: Finding) -> bool: ...
