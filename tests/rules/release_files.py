"""Real diffusers files for tests, taken at test time from a release wheel (tools/releases.py) or the installed package.

Nothing of diffusers is committed: a test names the release and the file, and works on a copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codemods.project.index import installed_diffusers
from tools.releases import ReleaseUnavailable, release_tree


def release_copy(version: str, relative: str, destination: Path) -> Path:
    """A writable copy of `diffusers/<relative>` as released in `version` (the test is skipped offline)."""
    try:
        source = release_tree(version) / "diffusers" / relative
    except ReleaseUnavailable as error:
        pytest.skip(str(error))
    target = destination / version / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    return target


def release_text(version: str, relative: str) -> str:
    try:
        return (release_tree(version) / "diffusers" / relative).read_text()
    except ReleaseUnavailable as error:
        pytest.skip(str(error))


def installed_copy(relative: str, destination: Path) -> Path:
    """A writable copy of `diffusers/<relative>` from the installed package."""
    target = destination / "installed" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(installed_diffusers() / relative, target)
    return target
