"""Where a line of a file's old text stands in its new text, so that findings left after a write point
into the file as it now is, not as it was before the fixes."""

from __future__ import annotations

import difflib
from dataclasses import replace

from codemods.findings import Finding


class LineMap:
    def __init__(self, before: str, after: str) -> None:
        matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
        self._opcodes = matcher.get_opcodes()

    def _block(self, line: int) -> tuple[str, int, int, int, int]:
        index = line - 1
        return next((op for op in self._opcodes if op[1] <= index < op[2]), self._opcodes[-1])

    def start(self, line: int) -> int:
        """The new line of old `line`; a line the fixes rewrote maps to the first line of its rewrite."""
        tag, i1, _, j1, _ = self._block(line)
        return j1 + (line - 1 - i1) + 1 if tag == "equal" else j1 + 1

    def end(self, line: int) -> int:
        """As `start`, but a rewritten line maps to the last line of its rewrite (a finding's end)."""
        tag, i1, _, j1, j2 = self._block(line)
        return j1 + (line - 1 - i1) + 1 if tag == "equal" else max(j2, j1 + 1)


def as_written(findings: list[Finding], changes: dict[str, tuple[str, str]]) -> list[Finding]:
    """`findings` with the lines of those in changed files moved to where they are in the new texts."""
    maps = {path: LineMap(before, after) for path, (before, after) in changes.items()}
    moved = []
    for finding in findings:
        lines = maps.get(finding.path)
        if lines is not None:
            finding = replace(finding, line=lines.start(finding.line), end_line=lines.end(finding.end_line))
        moved.append(finding)
    return moved
