"""Which files a run looks at (Python files under the given paths, minus excludes) and which it may change."""

from __future__ import annotations

import fnmatch
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
    """Python files under `paths`, sorted, without those matching an `exclude` glob (relative to `base`)."""
    patterns = tuple(exclude)
    found: dict[Path, None] = {}
    any_python = False
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
        candidates = [path] if path.is_file() else _python_files(path)
        any_python = any_python or bool(candidates)
        for candidate in candidates:
            if not _excluded(candidate, patterns, base):
                found[candidate.resolve()] = None
    if not any_python:  # an empty or wrong directory must not pass as a clean tree (excluded files may)
        where = ", ".join(map(str, paths))
        raise UsageError(f"{where}: no Python files here; give a file or a directory holding *.py files")
    return sorted(found)


def _python_files(directory: Path, visited: set[Path] | None = None) -> list[Path]:
    # A symlinked directory is followed once: a link back up the tree would otherwise never end.
    visited = visited if visited is not None else set()
    real = directory.resolve()
    if real in visited:
        return []
    visited.add(real)
    files = []
    try:
        children = sorted(directory.iterdir())
    except OSError as error:
        raise UsageError(f"{directory}: cannot list the directory: {error.strerror}") from None
    for child in children:
        if child.is_dir():
            if child.name not in _SKIPPED_DIRECTORIES and not child.name.startswith("."):
                files.extend(_python_files(child, visited))
        elif child.suffix == ".py" and child.is_file():  # not a dangling link
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
