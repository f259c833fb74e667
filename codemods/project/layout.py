"""Where a tree lies: the package a file belongs to, and its checkout's `tests/`.

Path questions only (no file is read): a warm check asks them of every directory it runs on before it
knows whether anything needs reading, so this module imports nothing of the rest of the project.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def package_root(path: Path) -> Path | None:
    """The outermost package directory holding `path` (`.../src/diffusers` for any file inside it)."""
    directory = path if path.is_dir() else path.parent
    return package_roots([directory])[directory]


def package_roots(directories: Iterable[Path]) -> dict[Path, Path | None]:
    """`package_root` of each directory, each directory on the way up looked at once (a tree's hundreds of
    directories share their parents: asked one by one, they took a tenth of a warm check). A loop, not a
    recursive closure: that would be a reference cycle, and a run keeps the cycle collector off."""
    roots: dict[Path, Path | None] = {}
    asked = list(directories)
    for start in asked:
        packages: list[Path] = []  # `start` and the package directories above it, up to one already looked at
        directory = start
        while directory not in roots and (directory / "__init__.py").is_file():
            packages.append(directory)
            if directory.parent == directory:
                break
            directory = directory.parent
        if directory not in roots and directory not in packages:
            roots[directory] = None  # no package: the walk stopped here
        top = roots.get(directory) or (packages[-1] if packages else None)
        for package in packages:
            roots[package] = top
    return {directory: roots[directory] for directory in asked}


def tests_dir_of(package: Path) -> Path | None:
    """`<checkout>/tests` for a tree at `<checkout>/src/<package>`, if there is one."""
    if package.parent.name == "src" and (package.parent.parent / "tests" / "__init__.py").is_file():
        return package.parent.parent / "tests"
    return None
