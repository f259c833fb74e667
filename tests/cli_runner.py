"""`codemod` as a user runs it: a subprocess, with the scan cache where the test says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def codemod(
    *args: str, cwd: Path, cache: Path | None = None, default_cache: bool = False
) -> subprocess.CompletedProcess:
    """Run `python -m codemod_cli ARGS` in `cwd`; the cache in `cache` (default: `cwd/.cache`), or, with
    `default_cache`, where the tool puts it by itself."""
    env = {key: value for key, value in os.environ.items() if key != "CODEMOD_CACHE_DIR"}
    if not default_cache:
        env["CODEMOD_CACHE_DIR"] = str(cache or cwd / ".cache")
    return subprocess.run([sys.executable, "-m", "codemod_cli", *args], cwd=cwd, env=env, capture_output=True, text=True)
