"""Runs one tree's targets in a worker subprocess and collects what each wrote.

The tree's parent directory goes first on PYTHONPATH (and nothing else that could hold a
diffusers), so the worker imports that tree alone, even in an interpreter that has a diffusers
installed (the checkout's environment, `--python`). A worker that dies or hangs costs only
the target it was on: the parent records it as failed and starts a fresh worker for the rest.

Within a verify run (`worker_zygote`: one for the whole run, which also forks the checkout's own
tests), a worker is forked by the run's zygote, which has already imported torch (`zygote.py`);
where it cannot serve a request, or for a caller without one, the worker is a fresh
`python -m bot.verify.running.worker REQUEST.json` (`start_child` decides). Either way it leads its
own process group, which a timeout kills whole.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import bot
from bot.verify.running.protocol import LAUNCHED_AT, WorkerRequest, outputs_path, result_path
from bot.verify.running.zygote import Zygote, serves, start_child

TARGET_TIMEOUT_S = 900.0
"""How long one target may take (build, two runs, compile checks) before its worker is stopped."""

_PROJECT_ROOT = Path(bot.__file__).resolve().parent.parent

HEAP_REUSE = {"MALLOC_MMAP_THRESHOLD_": str(4 << 30), "MALLOC_TRIM_THRESHOLD_": str(64 << 30)}
"""glibc keeps freed tensor memory for the next target instead of handing it back to the OS.

Each target builds its models afresh; by default every large tensor is a fresh mmap whose pages
fault in one at a time, the cost that dominated the biggest dummy components (Bria FIBO's
669M-parameter Wan VAE: 11 s to build in a new heap, 3-4 s in a reused one). On diffusers main
the whole verify went from 630 s to 549 s with the same verdicts. A process keeps its peak
memory until it exits; other C libraries ignore the variables."""


def inherited_environment() -> dict[str, str]:
    """This process's environment for a child that runs one tree: no PYTHONPATH (the caller sets its
    own, so no other diffusers leaks in), and heap reuse unless the user set the allocator."""
    return {**HEAP_REUSE, **{key: value for key, value in os.environ.items() if key != "PYTHONPATH"}}


def worker_environment(tree_parent: Path | None) -> dict[str, str]:
    """A worker's environment for the tree in `tree_parent`; None: the zygote's, which has no tree."""
    environment = inherited_environment()
    environment["PYTHONPATH"] = os.pathsep.join([*([str(tree_parent)] if tree_parent else []), str(_PROJECT_ROOT)])
    environment.setdefault("OMP_NUM_THREADS", "1")
    environment.setdefault("TOKENIZERS_PARALLELISM", "false")
    return environment


@contextmanager
def worker_zygote(python: Path | None, log: Path) -> Iterator[Zygote]:
    """A zygote for the children `python` (default: this one) runs until the block ends, started by the first that
    asks for it; its output goes to `log`."""
    zygote = Zygote(python or Path(sys.executable), worker_environment(None), log)
    try:
        yield zygote
    finally:
        zygote.stop()


def run_tree(
    request: WorkerRequest,
    timeout_s: float = TARGET_TIMEOUT_S,
    python: Path | None = None,
    zygote: Zygote | None = None,
) -> list[dict[str, Any]]:
    """Every target of `request` run against its tree, by `python` (default: this one; `zygote` forks its workers
    where it can, it must run the same interpreter): one result per target."""
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = list(request.targets)
    results: dict[int, dict[str, Any]] = {}
    start = 0
    while start < len(names):
        batch = WorkerRequest(**{**asdict(request), "targets": names[start:]})
        stopped, stderr = _run_worker(batch, out_dir / f"request-{start:03d}", timeout_s, python, zygote)
        done = start
        for offset in range(len(names) - start):
            path = result_path(out_dir / f"request-{start:03d}", offset)
            if not path.is_file():
                break
            result = json.loads(path.read_text())
            result["outputs_file"] = str(outputs_path(out_dir / f"request-{start:03d}", offset))
            results[start + offset] = result
            done = start + offset + 1
        if done < len(names):
            why = "timed out" if stopped else "worker exited"
            results[done] = {
                "target": names[done],
                "ok": False,
                "error": f"{why} while running this target: {_tail(stderr)}",
            }
            done += 1
        start = done
    return [results[index] for index in range(len(names))]


def _run_worker(
    request: WorkerRequest, directory: Path, timeout_s: float, python: Path | None, zygote: Zygote | None
) -> tuple[bool, str]:
    """Run the worker until it exits, or until one target has taken longer than `timeout_s`."""
    directory.mkdir(parents=True, exist_ok=True)
    request_file = directory / "request.json"
    request_file.write_text(json.dumps({**asdict(request), "out_dir": str(directory)}))
    stderr_file = directory / "stderr.txt"
    tree_parent = Path(request.package).parent
    environment = {**worker_environment(tree_parent), LAUNCHED_AT: repr(time.time())}
    python = python or Path(sys.executable)
    command = ["bot.verify.running.worker", str(request_file)]
    process = start_child(python, command, directory, stderr_file, environment, zygote if serves(request) else None)
    finished, last_progress = 0, time.monotonic()
    while process.poll() is None:
        time.sleep(0.2)
        now_finished = sum(1 for _ in directory.glob("[0-9][0-9][0-9].json"))
        if now_finished != finished:
            finished, last_progress = now_finished, time.monotonic()
        elif time.monotonic() - last_progress > timeout_s:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return True, stderr_file.read_text(errors="replace")
    return False, stderr_file.read_text(errors="replace")


def _tail(text: str, lines: int = 6) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-1500:] or "(no output)"
