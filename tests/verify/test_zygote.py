"""Workers forked by a verify run's zygote start as fresh ones do, with torch already imported, and fail, hang and
stop as fresh ones do; where the zygote cannot serve, the run starts fresh workers.

The trees are stand-in `diffusers` packages whose import records what the worker sees, crashes or hangs: the
worker imports its tree before its first target, so these take no target's time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from processes import alive

from bot.verify.running.protocol import WorkerRequest
from bot.verify.running.runner import run_tree, worker_environment, worker_zygote
from bot.verify.running.zygote import Zygote

RECORDS_ITS_START = """
import json, os, sys
json.dump({
    "parent": os.getppid(),
    "leads_its_session": os.getsid(0) == os.getpid(),
    "cwd": os.getcwd(),
    "path": sys.path[:2],
    "pythonpath": os.environ["PYTHONPATH"],
    "torch_dynamo_imported": "torch._dynamo" in sys.modules,
}, open("start.json", "w"))
"""
CRASHES = "import os\nprint('crashing in', os.getppid(), flush=True)\nos.abort()\n"
HANGS = """
import os, subprocess, time
sleeper = subprocess.Popen(["sleep", "600"])
open("pids.json", "w").write(f"[{os.getpid()}, {os.getppid()}, {sleeper.pid}]")
print("hanging", flush=True)
time.sleep(600)
"""


def _tree(root: Path, init: str) -> Path:
    """A stand-in diffusers whose `__init__` is `init`; returns the tree's parent (what goes first on the path)."""
    package = root / "tree" / "diffusers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    (package / "utils").mkdir()
    (package / "utils" / "__init__.py").write_text("")
    # What the worker's output census wraps.
    (package / "utils" / "outputs.py").write_text("class BaseOutput:\n    def __post_init__(self):\n        pass\n")
    return package.parent


def _request(tree: Path, out_dir: Path) -> WorkerRequest:
    return WorkerRequest(str(tree / "diffusers"), "cpu", ["NoSuchTarget"], str(out_dir))


def _started_like_a_worker(start: dict[str, Any], out_dir: Path, tree: Path) -> None:
    assert start["cwd"] == str(out_dir / "request-000")
    assert start["path"] == [start["cwd"], str(tree)]
    assert start["pythonpath"].split(os.pathsep)[0] == str(tree)
    assert start["leads_its_session"]


def test_a_forked_worker_starts_as_a_fresh_one_with_torch_already_imported(zygote: Zygote, tmp_path: Path) -> None:
    tree = _tree(tmp_path, RECORDS_ITS_START)
    (result,) = run_tree(_request(tree, tmp_path / "out"), zygote=zygote)
    assert result["error"].startswith("KeyError: \"no target named 'NoSuchTarget'")
    start = json.loads((tmp_path / "out" / "request-000" / "start.json").read_text())
    _started_like_a_worker(start, tmp_path / "out", tree)
    assert start["parent"] != os.getpid()
    assert start["torch_dynamo_imported"]


def test_where_the_zygote_did_not_start_the_worker_is_a_fresh_interpreter(tmp_path: Path) -> None:
    (tmp_path / "broken" / "torch").mkdir(parents=True)
    (tmp_path / "broken" / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    # The same interpreter and process-start settings as the worker's: only its import of torch fails.
    environment = {**worker_environment(None), "PYTHONPATH": str(tmp_path / "broken")}
    broken = Zygote(Path(sys.executable), environment, tmp_path / "zygote.txt")
    tree = _tree(tmp_path, RECORDS_ITS_START)
    try:
        (result,) = run_tree(_request(tree, tmp_path / "out"), zygote=broken)
    finally:
        broken.stop()
    assert "no torch here" in (tmp_path / "zygote.txt").read_text()
    assert result["error"].startswith("KeyError: \"no target named 'NoSuchTarget'")
    start = json.loads((tmp_path / "out" / "request-000" / "start.json").read_text())
    _started_like_a_worker(start, tmp_path / "out", tree)
    assert (start["parent"], start["torch_dynamo_imported"]) == (os.getpid(), False)


def test_a_forked_worker_that_crashes_fails_its_target_with_what_it_printed(zygote: Zygote, tmp_path: Path) -> None:
    (result,) = run_tree(_request(_tree(tmp_path, CRASHES), tmp_path / "out"), zygote=zygote)
    assert result["ok"] is False
    assert result["error"].startswith("worker exited while running this target: crashing in ")
    assert int(result["error"].split()[-1]) != os.getpid()  # its parent: the zygote


def test_a_forked_worker_that_hangs_is_killed_with_its_process_group(zygote: Zygote, tmp_path: Path) -> None:
    (result,) = run_tree(_request(_tree(tmp_path, HANGS), tmp_path / "out"), timeout_s=5, zygote=zygote)
    assert result["error"] == "timed out while running this target: hanging"
    worker, parent, sleeper = json.loads((tmp_path / "out" / "request-000" / "pids.json").read_text())
    assert parent != os.getpid()
    assert not alive(worker) and not alive(sleeper)


def test_stopping_the_zygote_kills_the_workers_it_runs_and_itself(tmp_path: Path) -> None:
    request = _request(_tree(tmp_path, HANGS), tmp_path / "out")
    pids = tmp_path / "out" / "request-000" / "pids.json"
    results: list[dict[str, Any]] = []
    with worker_zygote(None, tmp_path / "zygote.txt") as zygote:
        running = threading.Thread(target=lambda: results.extend(run_tree(request, zygote=zygote)))
        running.start()
        while not pids.is_file() or not pids.read_text().endswith("]"):
            assert running.is_alive()
            time.sleep(0.1)
    running.join(timeout=60)
    assert [result["error"] for result in results] == ["worker exited while running this target: hanging"]
    assert not any(alive(pid) for pid in json.loads(pids.read_text()))  # the worker, the zygote, the sleeper


# The run inherits this process's SIGINT: left ignored by an earlier module, the run would never see the Ctrl-C.
@pytest.mark.usefixtures("python_sigint")
def test_an_interrupted_run_leaves_no_zygote_and_no_worker(tmp_path: Path) -> None:
    request = _request(_tree(tmp_path, HANGS), tmp_path / "out")
    pids = tmp_path / "out" / "request-000" / "pids.json"
    script = (
        "from pathlib import Path\n"
        "from bot.verify.running.protocol import WorkerRequest\n"
        "from bot.verify.running.runner import run_tree, worker_zygote\n"
        f"with worker_zygote(None, Path({str(tmp_path / 'zygote.txt')!r})) as zygote:\n"
        f"    run_tree(WorkerRequest({request.package!r}, 'cpu', ['NoSuchTarget'], {request.out_dir!r}), zygote=zygote)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", script], start_new_session=True, stderr=subprocess.PIPE, text=True)
    while not pids.is_file() or not pids.read_text().endswith("]"):
        assert run.poll() is None, run.stderr.read() if run.stderr else ""
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGINT)  # as Ctrl-C reaches the run's foreground job; workers lead sessions of their own
    _, stderr = run.communicate(timeout=60)
    assert stderr.rstrip().endswith("KeyboardInterrupt")
    assert not any(alive(pid) for pid in json.loads(pids.read_text()))  # the worker, the zygote, the sleeper
