"""Where a case's diffusers code comes from: the installed package when it is the release the case
names, else that release's wheel (downloaded once and cached by `tools.releases`)."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from pathlib import Path

from tools.releases import PACKAGE, release_tree


@functools.cache
def installed_release() -> tuple[str, Path] | None:
    """The installed diffusers' version and package directory, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return importlib.metadata.version(PACKAGE), Path(spec.origin).parent


@functools.cache
def package_directory(release: str) -> Path:
    """The `diffusers/` directory of `release` (a version such as "0.42.1")."""
    installed = installed_release()
    if installed and installed[0] == release:
        return installed[1]
    return release_tree(release) / PACKAGE


@functools.cache
def module_text(release: str, module: str) -> str:
    """The text of `module` (a path inside the package, `models/embeddings.py`) as `release` has it."""
    return (package_directory(release) / module).read_text(encoding="utf-8")
