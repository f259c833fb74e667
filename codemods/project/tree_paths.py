"""Paths users give for files inside a tree: `codemod verify SRC --path P`, `codemod bot run --only P`.

A user types a path the way the shell sees it, relative to where they stand (a PR body's
"Reproduce" line, run from the checkout root, says `--path=src/diffusers/models/x.py`), or
absolute, or relative to the tree itself (`--path models/x.py`). All three name the same file; a
path that names nothing inside the tree is refused in one line that lists the forms accepted.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from codemods.errors import UsageError


def inside_tree(tree: Path, given: str | Path, option: str, cwd: Path | None = None) -> PurePosixPath:
    """`given` as a path relative to `tree`: first as typed (relative to `cwd`, default the current
    directory, or absolute), then relative to `tree`; it must exist and lie inside `tree`."""
    root = tree.resolve()
    typed = Path(given)
    candidates = [typed] if typed.is_absolute() else [(cwd or Path.cwd()) / typed, root / typed]
    for candidate in candidates:
        resolved = candidate.resolve()
        if resolved.is_relative_to(root) and resolved.exists():
            return PurePosixPath(resolved.relative_to(root).as_posix())
    raise UsageError(
        f"{option} {given}: no such file or directory inside {tree}; give it relative to the current directory,"
        f" as an absolute path, or relative to {tree}"
    )
