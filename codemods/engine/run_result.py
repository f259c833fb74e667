"""What a run is asked (Mode, RunOptions) and what it gives back (RunResult, ScanStats): the engine's
interface, shared by the CLI, the pre-commit hook, the bot and the reports (codemods/engine/entry.py runs it)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from codemods.findings import FileError, Finding
from codemods.project.frozen import DEPRECATED_REASON

if TYPE_CHECKING:
    from codemods.edits.formatter import GateReport
    from codemods.rules.base import Rule


class Mode(str, enum.Enum):
    WRITE = "write"  # apply fixes in place
    DIFF = "diff"  # show what fixes would change
    CHECK = "check"  # list findings only


@dataclass(frozen=True)
class RunOptions:
    paths: tuple[Path, ...]
    mode: Mode = Mode.WRITE
    unsafe_fixes: bool = False
    select: tuple[str, ...] | None = None  # None: from the configuration (default: every rule)
    ignore: tuple[str, ...] | None = None
    jobs: int = 0  # 0: one per core
    cache_dir: Path | None = None
    # None: from the configuration (default: skip pipelines/deprecated/); the bot passes False.
    include_deprecated: bool | None = None
    # Added to `[tool.codemod] opt-in`: the verifier and the bot take the fixes whose tests they run themselves.
    opt_in: tuple[str, ...] = ()
    # A diffusers package directory that files outside any package resolve class names against (None: none;
    # never the installed one unasked, so the pre-commit hook's environment, which has none, gives the same answer).
    context: Path | None = None


@dataclass
class ScanStats:
    """How much of the scan a run computed and how much it reused from the cache (per file, per rule)."""

    files_parsed: int = 0  # files (or fixed texts) parsed and checked by a worker
    rule_results_reused: int = 0  # (file, rule) results read from the cache
    rule_results_computed: int = 0  # (file, rule) results a worker computed
    result_reused: bool = False  # the whole result came from an earlier run on the same inputs (codemods.engine.result_cache)


@dataclass
class RunResult:
    mode: Mode
    rules: Sequence[Rule]
    files_scanned: int
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    # Findings in files the run may not change (pipelines/deprecated/): neither fixed nor reported, only counted.
    skipped: list[Finding] = field(default_factory=list)
    formatter: GateReport | None = None  # the target's pinned formatter as a gate on our hunks (None: none pinned)
    scan_stats: ScanStats = field(default_factory=ScanStats)
    passes: int = 0  # fix passes that changed the tree (codemods/engine/fix_loop.py)
    loose_files: int = 0  # files outside any package: what they name from diffusers is resolved only in `context`
    context: Path | None = None

    @property
    def remaining(self) -> list[Finding]:
        """The findings not fixed, at their lines in the tree the fix passes leave (the files as written):
        what a check of that tree finds (codemods/engine/fix_loop.py)."""
        return [f for f in self.findings if not f.fixed]

    def exit_code(self, include_cold: bool = False) -> int:
        """0: nothing left to report; 1: findings remain (or would change); 2: an error. A finding the reports leave
        out by default (`Finding.shown_by_default`: a safe fix always counts) counts only with `include_cold`."""
        if self.errors:
            return 2
        if self.mode is Mode.DIFF:
            return 1 if self.changes or any(include_cold or f.shown_by_default for f in self.findings) else 0
        return 1 if any(include_cold or f.shown_by_default for f in self.remaining) else 0

    def summary(self) -> dict[str, object]:
        """Counts over every finding, those the reports leave out by default included."""
        by_code: dict[str, int] = {}
        for finding in self.findings:
            by_code[finding.code] = by_code.get(finding.code, 0) + 1
        return {
            "findings_by_code": dict(sorted(by_code.items())),
            "findings": len(self.findings),
            "fixed": sum(f.fixed for f in self.findings),
            "fixable": sum(f.fix is not None and not f.fixed for f in self.findings),
            "files_scanned": self.files_scanned,
            "files_changed": len(self.changes),
            "errors": len(self.errors),
            "skipped": self.skipped_summary(),
            "formatter": self.formatter.to_dict() if self.formatter else None,
            "files_outside_package": self.loose_files,
            "context": str(self.context) if self.context else None,
        }

    def skipped_summary(self) -> list[dict[str, object]]:
        if not self.skipped:
            return []
        return [
            {
                "reason": DEPRECATED_REASON,
                "findings": len(self.skipped),
                "files": len({f.path for f in self.skipped}),
                "include_with": "[tool.codemod] include-deprecated = true",
            }
        ]
