"""SARIF `fixes` for findings the engine fixed: each fix alone, as replacements of the original text.

A fix is applied on its own to the file as it was (not together with the file's other fixes),
so each result's suggestion stands by itself, as a code-scanning alert does. Only fixes the
run itself applied, and therefore proved (the result parses, `# Copied from` copies agree, a
second pass is a no-op), are offered; a fix that does not apply alone is left out rather than
shown wrong.

Regions use SARIF's default columns (UTF-16 code units, 1-based); a replacement replaces whole
lines, so a suggestion reads like a diff hunk.
"""

from __future__ import annotations

import bisect
import difflib
from typing import Any

from codemods.findings import Finding
from codemods.fixing import ApplyJob, run_apply_job


def fix_of(finding: Finding, original: str, uri: str) -> dict[str, Any] | None:
    """The SARIF `fix` of one fixed finding, or None if its fix does not apply alone."""
    assert finding.fix is not None
    applied = run_apply_job(ApplyJob(finding.path, original, ((finding.code, finding.fix),)))
    if applied.text is None or applied.text == original:
        return None
    return {
        "description": {"text": finding.fix.description},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements(original, applied.text)}],
    }


def replacements(before: str, after: str) -> list[dict[str, Any]]:
    """Line-level SARIF replacements that turn `before` into `after`, in file order."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    line_starts = [0]
    for line in old:
        line_starts.append(line_starts[-1] + len(line))
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start, end, inserted = line_starts[i1], line_starts[i2], "".join(new[j1:j2])
        at_end = end == len(before) and before.endswith("\n")
        if at_end and start > 0 and inserted[-1:] in ("", "\n"):
            # A change at the very end would point past the last line: move it before the final line break.
            start, end, inserted = start - 1, end - 1, "\n" + inserted[:-1] if inserted else ""
        elif before[start:end].endswith("\n") and inserted.endswith("\n"):
            end, inserted = end - 1, inserted[:-1]  # keep the last line's break: the region ends at a line's end
        region = {**_position(before, line_starts, start, "start"), **_position(before, line_starts, end, "end")}
        found.append({"deletedRegion": region, "insertedContent": {"text": inserted}})
    return found


def _position(text: str, line_starts: list[int], offset: int, side: str) -> dict[str, int]:
    """`offset` as a 1-based line and a 1-based column in UTF-16 code units (SARIF's default)."""
    line = bisect.bisect_right(line_starts, offset) - 1
    if line == len(line_starts) - 1 and line > 0 and not text.endswith("\n"):
        line -= 1  # the end of a last line without a break is on that line, not after it
    column = len(text[line_starts[line] : offset].encode("utf-16-le")) // 2 + 1
    return {f"{side}Line": line + 1, f"{side}Column": column}
