"""Python source files read and written the way Python reads them.

Python accepts a UTF-8 byte-order mark, a PEP 263 `# -*- coding: ... -*-` declaration, and any
mix of `\\n`, `\\r\\n` and `\\r` line endings. A file is decoded as Python would decode it and,
when a fix changes it, encoded back the same way (same encoding, BOM kept); line endings are
never translated (the text keeps them, libcst keeps them, and new lines take the file's own).
A run refuses files the user cannot (or chose not to) write; it writes its files all or none
(codemods/engine/tree_write.py).
"""

from __future__ import annotations

import codecs
import os
import stat
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class SourceDecodeError(Exception):
    """The bytes are not Python source text (Python itself would refuse them); the message says why."""


class WriteRefused(Exception):
    """A file the run must not or cannot write; the message is the one-line reason."""


def decode_source(data: bytes) -> tuple[str, str]:
    """The text of a Python file and its codec, decoded as the interpreter would: a BOM (codec
    `utf-8-sig`, which strips it and writes it back), a PEP 263 cookie in the first two lines, else UTF-8."""
    second_line_end = data.find(b"\n", data.find(b"\n") + 1)
    head = data if second_line_end < 0 else data[:second_line_end]
    if b"coding" not in head and not data.startswith(codecs.BOM_UTF8):
        codec = "utf-8"  # the common case, without tokenize's line reader
    else:
        try:
            # tokenize's reader splits lines at `\n` only; Python's own tokenizer also at a lone `\r`.
            first_lines = iter(data.splitlines(keepends=True)[:2])
            codec, _ = tokenize.detect_encoding(lambda: next(first_lines, b""))
        except SyntaxError as error:  # an unknown codec, or a cookie that contradicts the BOM
            raise SourceDecodeError(f"cannot decode: {error.msg}") from None
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as error:
        name = "UTF-8" if codec in ("utf-8", "utf-8-sig") else codec
        raise SourceDecodeError(f"not valid {name} (byte {error.start}: {error.reason})") from None
    return text, codec


def encode_source(text: str, codec: str) -> bytes:
    """`text` in the file's own encoding; raises WriteRefused when a fix added what it cannot hold."""
    try:
        return text.encode(codec)
    except UnicodeEncodeError as error:
        reason = f"the fixed text cannot be written in the file's encoding ({codec}): {error.reason}"
        raise WriteRefused(reason) from None


@dataclass(frozen=True)
class SourceText:
    """A file as read: its bytes (to detect a change on disk before writing), text and codec."""

    data: bytes
    text: str
    codec: str

    def encode(self, text: str) -> bytes:
        return encode_source(text, self.codec)


def read_source(path: str | Path) -> SourceText:
    """`path` read and decoded (OSError and SourceDecodeError pass through)."""
    data = Path(path).read_bytes()
    return SourceText(data, *decode_source(data))


# (path, kind, compute from the text) -> compute's result, which a run may keep per file digest.
FileMemo = Callable[[str, str, Callable[[str], T]], T | None]


def uncached(path: str, kind: str, compute: Callable[[str], T]) -> T | None:
    """A `FileMemo` that keeps nothing: `compute` of the file's text (None when it cannot be read)."""
    try:
        return compute(memo_text(Path(path).read_bytes()))
    except OSError:
        return None


def memo_text(data: bytes) -> str:
    """The text every `FileMemo` hands `compute`: the file as Python reads it (`decode_source`), or nothing
    where Python could not decode it (such a file defines no class, copy or test that anything could use)."""
    try:
        return decode_source(data)[0]
    except SourceDecodeError:
        return ""


def why_not_writable(path: str | Path) -> str | None:
    """Why `path` must not be rewritten (None if it may): a read-only file is the user's decision.

    Checked before any fix is planned, so a `# Copied from` partner of a file that cannot change is
    not changed either. The mode bits count even for root, who could write it anyway.
    """
    try:
        status = os.stat(path)
    except OSError as error:
        return f"cannot read: {error.strerror}"
    if not status.st_mode & _WRITE_BITS or not os.access(path, os.W_OK):
        return "read-only file; not changed (make it writable to apply the fixes)"
    if not os.access(Path(path).parent, os.W_OK | os.X_OK):
        return "its directory is read-only; not changed"
    return None
