"""Lines numbered as Python numbers them: splitting text into lines, and turning an offset into a line."""

from __future__ import annotations

import bisect
import itertools
import re


class LineIndex:
    """Offsets of line starts, to turn a regex match offset into a line number."""

    def __init__(self, text: str) -> None:
        # splitlines/accumulate run in C; a Python loop over the text would dominate a cold scan.
        self._starts = list(itertools.accumulate(map(len, split_lines(text, keepends=True)), initial=0))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    def start_of(self, line: int) -> int:
        return self._starts[min(line, len(self._starts)) - 1]


# Python ends a line only at \n, \r\n or \r. `str.splitlines` also splits at a form feed, \v, \x1c-\x1e,
# \x85, \u2028 and \u2029, which would put every line after one of them off by one from `ast`'s numbers.
_OTHER_LINE_BREAKS = "\x0c\x0b\x1c\x1d\x1e\x85\u2028\u2029"
_PYTHON_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """`text.splitlines(keepends)`, with lines numbered as Python numbers them."""
    if not any(character in text for character in _OTHER_LINE_BREAKS):
        return text.splitlines(keepends)  # in C, and the same lines
    lines = _PYTHON_LINE.findall(text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]
