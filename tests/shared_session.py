"""Session fixtures built once per test run, also when pytest-xdist spreads the tests over workers.

Each xdist worker is a process with a session of its own, so a plain `scope="session"` fixture is
built once per worker: the copied and rewritten diffusers trees and the main-like checkout's
environment would be built twice on two cores. `build_once` builds into a directory that every
worker of one run shares (the parent of the workers' base temporary directories), under a file
lock: the first worker to get there builds and stores what the fixture returns; the others wait,
then read it back. Without xdist it is a plain session fixture in the session's base directory.
"""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock

Built = TypeVar("Built")


def run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory all workers of this run share: `pytest-N/`, where each worker's base is `pytest-N/popen-gwK/`."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Built]) -> Built:
    """What `build(directory)` returns, built once per run in `directory` and shared by every worker."""
    directory = run_directory(tmp_path_factory) / f"shared-{name}"
    stored = directory / "fixture.pickle"
    with FileLock(f"{directory}.lock"):
        if stored.is_file():
            return pickle.loads(stored.read_bytes())
        shutil.rmtree(directory, ignore_errors=True)  # a build that failed halfway in another worker
        directory.mkdir()
        built = build(directory)
        stored.write_bytes(pickle.dumps(built))
        return built
