"""Which files a run looks at (Python files under the given paths, minus excludes) and which it may change."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

from codemods.errors import UsageError

# diffusers' `pipelines/deprecated/README.md`: the maintainers "will not accept any changes to
# existing files" there. Those files are still scanned (other files' findings need their facts, and
# the summary counts what was skipped), but nothing there is fixed or reported unless the target's
# `[tool.codemod] include-deprecated = true` says so; the bot never proposes there at all.
# Never descended into: tool and VCS state, virtual environments, build output.
_SKIPPED_DIRECTORIES = {".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox", "build", "dist"}


def discover(paths: Iterable[Path], exclude: Iterable[str], base: Path) -> list[Path]:
    """Python files under `paths`, resolved and sorted, without those matching an `exclude` glob (relative to `base`)."""
    patterns = tuple(exclude)
    found: dict[Path, None] = {}
    any_python = False
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        candidates = [path.resolve()] if path.is_file() else _python_files(path, path.resolve(), set())
        any_python = any_python or bool(candidates)
        for candidate in candidates:
            if not _excluded(candidate, patterns, base):
                found[candidate] = None
    if not any_python:  # an empty or wrong directory must not pass as a clean tree (excluded files may)
        where = ", ".join(map(str, paths))
        raise UsageError(f"{where}: no Python files here; give a file or a directory holding *.py files")
    return sorted(found)


def _python_files(directory: Path, real: Path, visited: set[Path]) -> list[Path]:
    """The resolved paths of the Python files under `directory`, whose resolved path is `real`."""
    # A symlinked directory is followed once: a link back up the tree would otherwise never end.
    if real in visited:
        return []
    visited.add(real)
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:
        raise UsageError(f"{directory}: cannot list the directory: {error.strerror}") from None
    files = []
    for entry in entries:
        if entry.is_dir():
            if entry.name not in _SKIPPED_DIRECTORIES and not entry.name.startswith("."):
                files.extend(_python_files(Path(entry.path), _resolved(entry, real), visited))
        # `len > 3`: a file named `.py` alone has no suffix (as `Path.suffix` says); `is_file`: not a dangling link.
        elif entry.name.endswith(".py") and len(entry.name) > 3 and entry.is_file():
            files.append(_resolved(entry, real))
    return files


def _resolved(entry: os.DirEntry, real_directory: Path) -> Path:
    """The entry's resolved path: its directory's, resolved once for all its entries, unless the entry is a link
    (resolving each of a tree's files on its own was most of a warm check's time)."""
    return Path(entry.path).resolve() if entry.is_symlink() else real_directory / entry.name


def _excluded(resolved: Path, patterns: tuple[str, ...], base: Path) -> bool:
    if not patterns:
        return False
    relative = resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else resolved.as_posix()
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
            return True
        if "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False
