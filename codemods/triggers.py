"""Trigger regexes found fast: a regex with the literal text where its matches begin.

`re` scans quickly only for a regex that opens with one literal string; an alternation opening
with several (`self\\.x|torch\\.tensor\\(`), a `\\b` or a `^` makes it try the whole regex at every
offset of the text. A `Trigger` finds where its matches can begin with `str.find` (in C) and tries
its regex there only; `AnyOf`, an alternation of branches that each open with a literal, lets `re`
scan for each branch on its own. Each answers as the regex's own `finditer` and `search`: the same matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import groupby

_SHARED_OPENING = 4  # literals opening with one character, from which one regex pass finds them faster
_WINDOW = 8192  # characters of text (then to the end of the line) whose literals are found at once


class Trigger:
    """`pattern`, each of whose matches begins with one of `literals` or, with `line_start`, begins a line
    (after a `\\n`) and holds one of them on it. A match then begins at a literal (or at the start of its
    line): those are the only offsets tried. A wrong literal would lose matches; tests hold these to the
    regex alone over the installed diffusers."""

    def __init__(self, pattern: str, *literals: str, flags: int = 0, line_start: bool = False) -> None:
        if not literals or not all(literals):
            raise ValueError("a trigger needs literals, none empty")
        self.pattern = re.compile(pattern, flags)
        self.literals = literals
        self.line_start = line_start
        # `str.find` scans for a literal in C, a pass per literal. Where several share their first character, one
        # pass of a regex opening with it finds them all (`re` scans for a one-character prefix in a tight loop, and
        # tries the rest, a lookahead that lets them overlap, where it is): over diffusers, about as long as three or
        # four `str.find` passes where the character is common (`t`), so three literals are still found apart.
        self._found_apart: list[str] = []
        self._openings: list[tuple[re.Pattern[str], int]] = []  # each with its longest literal
        for first, group in groupby(sorted(literals), key=lambda literal: literal[0]):
            same = list(group)
            if len(same) < _SHARED_OPENING:
                self._found_apart += same
            else:
                rests = "|".join(re.escape(literal[1:]) for literal in same)
                self._openings.append((re.compile(f"{re.escape(first)}(?={rests})"), max(map(len, same))))
        # One literal found apart yields its offsets in order, once each: nothing to merge.
        self._merged = len(self._found_apart) + len(self._openings) > 1 or line_start

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        """`pattern.finditer(text, pos, endpos)`: each match holds a literal, so none is empty, and the next
        one is the regex's match at the first offset from the end of the last where it matches. Offsets are
        found a window of lines at a time: `search` reads no further than its match's window."""
        end = len(text) if endpos is None else min(endpos, len(text))
        if all(text.find(literal, pos, end) < 0 for literal in self.literals):
            return  # most texts and ranges searched hold none: a scan for each literal (in C) says so without windows
        resume = start = pos
        while start < end:
            stop = text.find("\n", start + _WINDOW, end) + 1 or end
            for offset in self._offsets(text, start, stop, end):
                if offset >= resume and (match := self.pattern.match(text, offset, end)):
                    yield match
                    resume = match.end()
            start = stop

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        return next(self.finditer(text, pos, endpos), None)

    def _offsets(self, text: str, start: int, stop: int, end: int) -> list[int]:
        """Where a match can begin, in order, for the literals beginning in `text[start:stop]` (whole lines but
        the first, which begins a line or the search)."""
        # A literal beginning before `stop` may end after it: each is searched for up to there.
        found = [
            at
            for opening, longest in self._openings
            for at in map(re.Match.start, opening.finditer(text, start, min(stop + longest - 1, end)))
            if at < stop
        ]
        for literal in self._found_apart:
            bound = min(stop + len(literal) - 1, end)
            at = text.find(literal, start, bound)
            while at >= 0:
                found.append(at)
                at = text.find(literal, at + 1, bound)
        if self.line_start:
            found = [line for line in (text.rfind("\n", 0, at) + 1 for at in found) if line >= start]
        return sorted(set(found)) if self._merged else found


class AnyOf:
    """The alternation of `branches`, each opening with literal text (`self\\.\\w+\\.to\\(`, `\\[\\s*"sample"`). A
    `Trigger` tries its regex in Python at each literal found; where a literal is common (`self.`, `[`) and matches
    are few, letting `re` find each branch's matches on its own (in C) is faster. The alternation matches, at the
    first offset where any branch does, the first branch that matches there: so does the merge below. No branch
    may match the empty string (an empty match would make `finditer` step on by one character)."""

    def __init__(self, *branches: str, flags: int = 0) -> None:
        self.pattern = re.compile("|".join(f"(?:{branch})" for branch in branches), flags)
        self._branches = [re.compile(branch, flags) for branch in branches]

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        """`pattern.finditer(text, pos, endpos)`: each branch's next match from `pos`, the first of them taken."""
        end = len(text) if endpos is None else endpos
        upcoming = [branch.search(text, pos, end) for branch in self._branches]
        while True:
            first = None
            for match in upcoming:
                if match is not None and (first is None or match.start() < first.start()):
                    first = match  # where two begin at one offset, the earlier branch's (`<`)
            if first is None:
                return
            yield first
            pos = first.end()
            upcoming = [
                match if match is None or match.start() >= pos else branch.search(text, pos, end)
                for match, branch in zip(upcoming, self._branches, strict=True)
            ]

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        return next(self.finditer(text, pos, endpos), None)
