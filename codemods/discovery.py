"""Which files a run looks at: Python files under the given paths, minus excludes."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import Path

from codemods.errors import UsageError

# Never descended into: tool and VCS state, virtual environments, build output.
_SKIPPED_DIRECTORIES = {".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox", "build", "dist"}


def discover(paths: Iterable[Path], exclude: Iterable[str], base: Path) -> list[Path]:
    """Python files under `paths`, sorted, without those matching an `exclude` glob (relative to `base`)."""
    patterns = tuple(exclude)
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        candidates = [path] if path.is_file() else _python_files(path)
        for candidate in candidates:
            if not _excluded(candidate, patterns, base):
                found[candidate.resolve()] = None
    return sorted(found)


def _python_files(directory: Path) -> list[Path]:
    files = []
    for child in sorted(directory.iterdir()):
        if child.is_dir():
            if child.name not in _SKIPPED_DIRECTORIES and not child.name.startswith("."):
                files.extend(_python_files(child))
        elif child.suffix == ".py":
            files.append(child)
    return files


def _excluded(path: Path, patterns: tuple[str, ...], base: Path) -> bool:
    if not patterns:
        return False
    resolved = path.resolve()
    relative = resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else resolved.as_posix()
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
            return True
        if "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False
