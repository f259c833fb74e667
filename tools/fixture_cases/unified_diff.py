"""Unified diffs over a case's files: made with zero context, applied strictly.

Both a case's own modifications (`<case>.patch`) and its expected change (`<case>.diff`) are unified
diffs whose paths are relative to the case's tree (`--- a/diffusers/models/x.py`). Applying one never
fuzzes or searches: every removed or context line must be exactly where its hunk header says, so a
patch that no longer fits its source fails with the file and line instead of landing elsewhere.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(Exception):
    """A diff that does not parse, or does not apply to the text it names."""


def make_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A zero-context unified diff from `before` to `after` (path -> text); empty when they are equal."""
    chunks = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path, ""), after.get(path, "")
        if old == new:
            continue
        for text, side in ((old, "before"), (new, "after")):
            if text and not text.endswith("\n"):
                raise PatchError(f"{path} ({side}) does not end with a newline")
        lines = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=0
        )
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return "".join(chunks)


@dataclass
class _Hunk:
    old_start: int
    old_count: int
    lines: list[str] = field(default_factory=list)  # with their ' ', '-' or '+' prefix


def _parse(patch: str, name: str) -> dict[str, list[_Hunk]]:
    files: dict[str, list[_Hunk]] = {}
    hunks: list[_Hunk] | None = None
    for number, line in enumerate(patch.splitlines(keepends=True), 1):
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            path = line[4:].strip()
            hunks = files.setdefault(path.removeprefix("b/"), [])
        elif line.startswith("@@"):
            header = HUNK_HEADER.match(line)
            if header is None or hunks is None:
                raise PatchError(f"{name}:{number}: not a hunk header under a file header: {line.rstrip()}")
            old_start, old_count = int(header[1]), int(header[2] if header[2] is not None else 1)
            hunks.append(_Hunk(old_start, old_count))
        elif line[:1] in (" ", "-", "+") and hunks:
            hunks[-1].lines.append(line if line.endswith("\n") else line + "\n")
        elif line.strip() and not line.startswith(("diff ", "index ", "\\")):
            raise PatchError(f"{name}:{number}: unexpected line in a unified diff: {line.rstrip()}")
    return files


def apply_diff(files: dict[str, str], patch: str, name: str = "patch") -> dict[str, str]:
    """`files` (path -> text) with `patch` applied; a path the patch names but `files` lacks starts empty."""
    result = dict(files)
    for path, hunks in _parse(patch, name).items():
        result[path] = _apply_hunks(result.get(path, ""), hunks, f"{name}: {path}")
    return result


def _apply_hunks(text: str, hunks: list[_Hunk], where: str) -> str:
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # index into `lines` of the next line not yet copied
    for hunk in hunks:
        # A hunk that removes nothing (`-N,0`) inserts after line N; otherwise it starts at line N.
        start = hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1
        if start < position or start > len(lines):
            raise PatchError(f"{where}: hunk at line {hunk.old_start} is out of order or past the end")
        out += lines[position:start]
        position = start
        for line in hunk.lines:
            if line[0] == "+":
                out.append(line[1:])
                continue
            found = lines[position] if position < len(lines) else "<end of file>"
            if found != line[1:]:
                raise PatchError(
                    f"{where}: line {position + 1} is {found.rstrip()!r}, the patch expects {line[1:].rstrip()!r}"
                )
            if line[0] == " ":
                out.append(found)
            position += 1
    return "".join(out + lines[position:])
