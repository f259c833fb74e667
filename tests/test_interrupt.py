"""Ctrl-C during `codemod run --unsafe-fixes` on a copy of the installed diffusers: the tree is left either as it
was or as the complete rewrite, never between, and the run says which in one line and exits 130.

The runs fix one subpackage of the copy (`RUN_ON`), the rest of the package read as its context: the moments
interrupted here (the workers scanning, rewritten files being staged) come in any run with several files to
scan and fix, and the reference run over the whole package alone took 48 s of the suite's time.

The signal is a real SIGINT sent to the run's process group, as a terminal sends it, at moments the test
sees from outside: while the workers scan (they are the run's children), and the instant the first rewritten
file is staged beside its target (the run is stopped there with SIGSTOP so that the signal lands in
staging, not later). A signal during the commit's renames, too short to hit from outside, is sent from
inside by the renames themselves (tests/test_tree_write.py).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from codemods.project.index import installed_diffusers

INTERRUPTED = 130
IN_CREATE = 0x100  # <sys/inotify.h>
# 14 modules, 9 of them rewritten (installed 0.42.1): enough that the scan uses the worker processes (8 files or more).
RUN_ON = "diffusers/models/controlnets"
STAGING_TRIES = 5


def _copy(source: Path, destination: Path) -> Path:
    shutil.rmtree(destination / "diffusers", ignore_errors=True)
    shutil.copytree(source, destination / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def _digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _start(root: Path, cache: Path | None, niceness: int = 0) -> subprocess.Popen:
    cache_args = ["--no-cache"] if cache is None else []
    env = {**os.environ, "OMP_NUM_THREADS": "1", **({"CODEMOD_CACHE_DIR": str(cache)} if cache else {})}
    return subprocess.Popen(
        [sys.executable, "-m", "codemod_cli", "run", "--unsafe-fixes", "--jobs", "2", *cache_args, RUN_ON],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell's foreground job: Ctrl-C reaches it all
        preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
    )


def _wait_until(condition, run: subprocess.Popen, pause: float = 0.001, timeout: float = 600) -> bool:
    """Whether `condition` came true while the run was still going (False: it ended first)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if run.poll() is not None:
            return False
        assert time.monotonic() < deadline
        time.sleep(pause)
    return True


@contextmanager
def _file_creations(directory: Path) -> Iterator[Callable[[float], bool]]:
    """Whether a file was created in `directory` within some seconds, as the kernel reports it (inotify(7)): the
    test wakes the instant the first staged copy appears, where a poll came too late for a run that stages its
    files within a millisecond (1 in 8 runs missed the moment)."""
    libc = ctypes.CDLL(None, use_errno=True)
    descriptor = libc.inotify_init1(os.O_CLOEXEC)
    if descriptor < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    try:
        if libc.inotify_add_watch(descriptor, os.fsencode(directory), IN_CREATE) < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        yield lambda seconds: bool(select.select([descriptor], [], [], seconds)[0])
    finally:
        os.close(descriptor)


def _has_workers(run: subprocess.Popen) -> bool:
    children = Path(f"/proc/{run.pid}/task/{run.pid}/children")
    return bool(children.read_text().split())


def _staged_files(root: Path) -> list[Path]:
    return list((root / RUN_ON).glob(".*.codemod-*"))  # beside their targets, all in this one directory


def _interrupt(run: subprocess.Popen, stop_first: bool) -> tuple[float, str]:
    """Ctrl-C on the run's process group; the seconds until it exited, and its stderr."""
    group = os.getpgid(run.pid)
    if stop_first:  # frozen where it stands, so that the signal is taken there
        os.killpg(group, signal.SIGSTOP)
    sent = time.monotonic()
    os.killpg(group, signal.SIGINT)
    if stop_first:
        os.killpg(group, signal.SIGCONT)
    _, stderr = run.communicate(timeout=60)
    return time.monotonic() - sent, stderr


@dataclass(frozen=True)
class Reference:
    root: Path  # where every run of this module happens: the scan cache is keyed by path
    cache: Path  # warm from the uninterrupted run
    original: dict[str, str]  # digests of the tree as copied
    rewritten: dict[str, str]  # digests after an uninterrupted run

    def fresh_tree(self) -> Path:
        return _copy(installed_diffusers(), self.root)

    def changed(self) -> list[str]:
        return [path for path in self.rewritten if self.rewritten[path] != self.original[path]]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    root = _copy(installed_diffusers(), tmp_path_factory.mktemp("tree"))
    original = _digests(root)
    cache = tmp_path_factory.mktemp("cache")
    completed = _start(root, cache)
    completed.communicate(timeout=900)
    assert completed.returncode == 1  # findings remain; no error
    reference = Reference(root, cache, original, _digests(root))
    changed = reference.changed()
    assert len(changed) > 5 and all(path.startswith(f"{RUN_ON}/") for path in changed)
    return reference


def test_ctrl_c_while_scanning_writes_nothing_and_says_so_at_once(reference: Reference) -> None:
    root = reference.fresh_tree()
    run = _start(root, cache=None)
    assert _wait_until(lambda: _has_workers(run), run), f"the run ended before its workers started: {run.stderr.read()}"
    seconds, stderr = _interrupt(run, stop_first=False)
    assert run.returncode == INTERRUPTED
    assert stderr.splitlines() == ["codemod: interrupted in the scan phase; nothing written, the tree is as it was"]
    assert _digests(root) == reference.original
    assert seconds < 3  # it took up to 5.7 s, the workers finishing every queued file (0.1 s measured here)


def test_ctrl_c_at_the_first_staged_file_writes_nothing_and_leaves_no_staged_file(reference: Reference) -> None:
    # The run stages its files within milliseconds. On loaded cores it may stage and commit them all before this
    # process wakes: that run is whole (the other state a Ctrl-C may leave), and the moment is tried again on a
    # fresh copy, the run at a lower priority than this process.
    for _ in range(STAGING_TRIES):
        root = reference.fresh_tree()
        with _file_creations(root / RUN_ON) as created:
            run = _start(root, reference.cache, niceness=10)
            if _wait_until(lambda: created(0.01) and bool(_staged_files(root)), run, pause=0):
                _, stderr = _interrupt(run, stop_first=True)
                break
        assert (run.returncode, _digests(root)) == (1, reference.rewritten), run.stderr.read()
    else:
        pytest.fail(f"the run finished before its first staged file was seen, {STAGING_TRIES} times")
    assert run.returncode == INTERRUPTED
    assert stderr.splitlines() == [
        f"codemod: interrupted while staging {len(reference.changed())} rewritten file(s); nothing written, the tree is as it was"
    ]
    assert _digests(root) == reference.original
