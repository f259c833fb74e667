"""Pinned command-line tools (the target's ruff), installed once into a cached tool environment.

`pip install --target <cache>/ruff-0.9.10 ruff==0.9.10` with this interpreter's pip: a ruff wheel
is a single binary, so the environment is a directory with `bin/ruff`. The cache lives in
`$CODEMOD_TOOL_CACHE` (default `~/.cache/diffusers-codemod/tools`). An install that fails
(offline, no such version) is remembered for an hour, so a pre-commit hook does not wait on the
network at every commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_RETRY_FAILED_AFTER_S = 3600


class ToolUnavailable(Exception):
    """The pinned tool cannot be installed; the message is one line."""


def tool_cache() -> Path:
    configured = os.environ.get("CODEMOD_TOOL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "diffusers-codemod" / "tools"


def installed_tool(name: str, version: str) -> Path:
    """The executable of `name==version`, installed on first use."""
    try:
        return _installed(name, version)
    except OSError as error:  # an unwritable cache, a full disk
        raise ToolUnavailable(f"cannot install {name}=={version}: {error.strerror}: {error.filename}") from None


def _installed(name: str, version: str) -> Path:
    environment = tool_cache() / f"{name}-{version}"
    executable = environment / "bin" / name
    if executable.is_file():
        return executable
    failed = environment.with_name(f"{name}-{version}.failed")
    if failed.is_file() and time.time() - failed.stat().st_mtime < _RETRY_FAILED_AFTER_S:
        raise ToolUnavailable(failed.read_text("utf-8").strip())
    environment.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=environment.parent, prefix=f".{name}-{version}.") as scratch:
        target = Path(scratch) / "environment"
        command = [
            sys.executable, "-m", "pip", "install", f"{name}=={version}", "--target", str(target), "--no-deps",
            "--only-binary=:all:", "--quiet", "--disable-pip-version-check", "--retries", "0", "--timeout", "15",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not (target / "bin" / name).is_file():
            last = (done.stderr.strip().splitlines() or ["no executable in the wheel"])[-1]
            reason = f"cannot install {name}=={version}: {last}"
            failed.write_text(reason + "\n", "utf-8")
            raise ToolUnavailable(reason)
        try:
            os.replace(target, environment)  # atomic: a concurrent run sees the whole environment or none
        except OSError:
            if not executable.is_file():
                raise ToolUnavailable(f"cannot install {name}=={version} into {environment}") from None
    failed.unlink(missing_ok=True)
    return executable
