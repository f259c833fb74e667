"""SARIF `fixes` for findings the engine fixed: each fix alone, as replacements of the original text.

Each result's suggestion stands by itself, as a code-scanning alert does: it is what that one
fix does to the file as it was, not together with the file's other fixes. Only fixes the run
itself applied, and therefore proved (the result parses, `# Copied from` copies agree, a second
pass is a no-op), are offered.

The run already holds each file's combined change, so a fix's suggestion is the part of that
change it owns: the hunks its edits cover, plus the new import lines when it is the only fix in
the file that asked for imports. When a hunk belongs to more than one fix (adjacent rewrites
merge into one hunk, a class rewritten for several findings) or to none, the file's fixes are
applied again one at a time with libcst instead, which is exact but costs a parse per fix; a fix
that does not apply alone is left out rather than shown wrong.

Regions use SARIF's default columns (UTF-16 code units, 1-based); a replacement replaces whole
lines, so a suggestion reads like a diff hunk.
"""

from __future__ import annotations

import bisect
import difflib
from typing import Any

from codemods.engine.apply_jobs import ApplyJob, run_apply_job
from codemods.findings import Finding

Hunk = tuple[int, int, int, int]  # difflib's i1, i2, j1, j2: old lines [i1, i2) became new lines [j1, j2)


def file_fixes(fixed: list[Finding], before: str, after: str, uri: str) -> dict[int, dict[str, Any]]:
    """The SARIF `fix` of each fixed finding of one file, by `id(finding)` (absent: it does not apply alone)."""
    texts = texts_from_hunks(fixed, before, after)
    if texts is None:
        texts = texts_applied_alone(fixed, before)
    return {
        id(finding): _fix(finding, before, texts[id(finding)], uri)
        for finding in fixed
        if texts.get(id(finding), before) != before
    }


def texts_from_hunks(fixed: list[Finding], before: str, after: str) -> dict[int, str] | None:
    """Each finding's text from the hunks of the file's change it owns; None when a hunk's owner is not one fix."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    hunks = [h for tag, *h in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if tag != "equal"]
    owners = [_owners(hunk, fixed) for hunk in hunks]
    if any(len(owner) != 1 for owner in owners):
        return None
    return {
        id(finding): _with_hunks(old, new, [hunk for hunk, owner in zip(hunks, owners) if owner == [finding]])
        for finding in fixed
    }


def texts_applied_alone(fixed: list[Finding], before: str) -> dict[int, str]:
    """Each finding's fix applied alone with libcst (exact, one parse per fix); absent where it fails alone."""
    texts = {}
    for finding in fixed:
        applied = run_apply_job(ApplyJob(finding.path, before, ((finding.code, finding.fix),)))
        if applied.text is not None:
            texts[id(finding)] = applied.text
    return texts


def _owners(hunk: Hunk, fixed: list[Finding]) -> list[Finding]:
    i1, i2, _, _ = hunk
    owners = [f for f in fixed if any(_covers(edit, i1, i2) for edit in f.fix.edits)]  # type: ignore[union-attr]
    # A hunk no edit covers is the import block the fixes asked for.
    return owners or [f for f in fixed if f.fix.imports]  # type: ignore[union-attr]


def _covers(edit: Any, i1: int, i2: int) -> bool:
    """Whether the edit's node holds the hunk (old lines i1+1..i2, 1-based; i1 == i2: new lines after line i1)."""
    target = edit.target
    if i1 == i2:  # pure insertion: between old lines i1 and i1 + 1
        return target.line <= i1 + 1 <= target.end_line or target.line <= i1 <= target.end_line
    return not edit.inserts and i1 + 1 <= target.end_line and target.line <= i2


def _with_hunks(old: list[str], new: list[str], hunks: list[Hunk]) -> str:
    """The old text with only these hunks of the change applied."""
    lines, position = [], 0
    for i1, i2, j1, j2 in hunks:
        lines += old[position:i1] + new[j1:j2]
        position = i2
    return "".join(lines + old[position:])


def _fix(finding: Finding, before: str, after: str, uri: str) -> dict[str, Any]:
    assert finding.fix is not None
    return {
        "description": {"text": finding.fix.description},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements(before, after)}],
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
