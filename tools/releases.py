"""diffusers releases from PyPI as source trees: downloaded once, cached, never committed.

A release wheel holds the package's source, so `pip download diffusers==X --no-deps` is all it
takes. The cache lives in `$CODEMOD_RELEASE_CACHE` (default `~/.cache/diffusers-codemod/releases`);
each release is unpacked to `<cache>/<version>/diffusers` and reused read-only afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "diffusers"


class ReleaseUnavailable(Exception):
    """The release could not be downloaded (no network, or no such version)."""


def cache_root() -> Path:
    configured = os.environ.get("CODEMOD_RELEASE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "diffusers-codemod" / "releases"


def release_tree(version: str) -> Path:
    """The directory holding `diffusers/` as released in `version` (downloaded on first use)."""
    root = cache_root() / version
    if (root / PACKAGE / "__init__.py").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent, prefix=f".{version}.") as scratch:
        wheel = _download(version, Path(scratch))
        unpacked = Path(scratch) / "tree"
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(f"{PACKAGE}/")]
            archive.extractall(unpacked, members)
        try:
            os.replace(unpacked, root)  # atomic: a concurrent caller either sees the whole tree or none
        except OSError:
            if not (root / PACKAGE / "__init__.py").is_file():
                raise
    return root


def _download(version: str, into: Path) -> Path:
    command = [
        sys.executable, "-m", "pip", "download", f"{PACKAGE}=={version}",
        "--no-deps", "--only-binary=:all:", "--quiet", "--disable-pip-version-check", "-d", str(into),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(into.glob(f"{PACKAGE}-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise ReleaseUnavailable(f"cannot download {PACKAGE}=={version}: {last}")
    return wheels[0]


def copy_release(version: str, destination: Path) -> Path:
    """A writable copy of the release's `diffusers/` under `destination` (which is returned)."""
    shutil.copytree(release_tree(version) / PACKAGE, destination / PACKAGE)
    return destination
