"""`codemod` as a user runs it: a subprocess, with the scan cache where the test says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codemods.project.index import installed_diffusers


def codemod(
    *args: str, cwd: Path, cache: Path | None = None, default_cache: bool = False, context: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run `python -m codemod_cli ARGS` in `cwd`; the cache in `cache` (default: `cwd/.cache`), or, with
    `default_cache`, where the tool puts it by itself. With `context`, files outside any package (the
    fixture cases: diffusers modules cut out of their package) look up classes in the installed diffusers
    (`CODEMOD_CONTEXT`, as `--context`). `env`: more environment variables."""
    environment = {key: value for key, value in os.environ.items() if key not in ("CODEMOD_CACHE_DIR", "CODEMOD_CONTEXT")}
    if not default_cache:
        environment["CODEMOD_CACHE_DIR"] = str(cache or cwd / ".cache")
    if context:
        environment["CODEMOD_CONTEXT"] = str(installed_diffusers())
    return subprocess.run(
        [sys.executable, "-m", "codemod_cli", *args], cwd=cwd, env={**environment, **(env or {})}, capture_output=True, text=True
    )
