"""Scan results cached by file path + content, tool version, rule selection and tree facts.

A warm run over an unchanged tree reads and hashes the files and parses none of them.
The cache is one pickle per key in the cache directory (like ruff's, with a `.gitignore`
so it never lands in a commit).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from codemods import __version__

# Entries from other runs kept beside this run's, so switching between two trees stays warm.
_MAX_ENTRIES = 20_000


def digest(path: str, data: bytes) -> str:
    """Identity of a file's scan: its path (module names, copies depend on it) and its bytes."""
    return hashlib.blake2b(path.encode() + b"\0" + data, digest_size=16).hexdigest()


class ScanCache:
    def __init__(self, directory: Path | None, key: str) -> None:
        self._path = None
        self._entries: dict[str, Any] = {}
        self._dirty = False
        if directory is None:
            return
        name = hashlib.blake2b(f"{__version__}|{key}".encode(), digest_size=12).hexdigest()
        self._path = directory / f"scan-{name}.pickle"
        try:
            with self._path.open("rb") as handle:
                self._entries = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError):
            self._entries = {}  # a missing or stale cache is an empty one

    def get(self, key: str) -> Any | None:
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self._entries[key] = value
        self._dirty = True

    def save(self, keep: set[str]) -> None:
        if self._path is None or not self._dirty:
            return
        entries = {k: v for k, v in self._entries.items() if k in keep}
        for k, v in self._entries.items():
            if len(entries) >= _MAX_ENTRIES:
                break
            entries.setdefault(k, v)
        directory = self._path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            gitignore = directory / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Created by diffusers-codemod.\n*\n")
            with tempfile.NamedTemporaryFile("wb", dir=directory, delete=False) as handle:
                pickle.dump(entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(handle.name, self._path)
        except OSError:
            pass  # a read-only checkout still gets its findings, only slower next time
