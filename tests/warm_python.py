"""`python -c CODE` in a tree, forked from a server that has already imported what every tree's diffusers imports.

A test that runs a diffusers tree runs it in a process of its own (never two diffusers in one process). A fresh
interpreter spends ~6 CPU s importing torch, torch._dynamo and transformers, the same for every tree, before the
tree's own modules. The server (multiprocessing's fork server, one per test process, started on first use) imports
those three and never a diffusers; each run is a child forked from it, laid out as `python -c` with PYTHONPATH set
would be: the code runs as `__main__`, the working directory and then the tree first on `sys.path`, the run's
environment, its output in files of its own, its exit code the process's. The server starts in the environment of
the first run's test process (what torch and transformers read as they import): a run hands that environment, plus
its tree's variables, which nothing reads before diffusers imports.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import types
from functools import cache
from pathlib import Path

_SERVER = multiprocessing.get_context("forkserver")
_SERVER.set_forkserver_preload(["torch", "torch._dynamo", "transformers"])


def run_python(code: str, cwd: Path, environment: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """What `subprocess.run([python, "-c", code], cwd=cwd, env=environment, capture_output=True, text=True,
    timeout=timeout)` returns, for `code` that may import torch and transformers (already imported) and a diffusers
    from `environment`'s PYTHONPATH."""
    with tempfile.TemporaryDirectory() as scratch:
        stdout, stderr = Path(scratch) / "stdout", Path(scratch) / "stderr"
        paths = (str(stdout), str(stderr), _interpreter_path())
        child = _SERVER.Process(target=_as_dash_c, args=(code, str(cwd), environment, *paths))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["-c", code], timeout, stdout.read_text(), stderr.read_text())
        return subprocess.CompletedProcess(["-c", code], child.exitcode, stdout.read_text(), stderr.read_text())


def _as_dash_c(
    code: str, cwd: str, environment: dict[str, str], stdout: str, stderr: str, interpreter_path: list[str]
) -> None:
    """The forked child: set up as `python -c` would be, run `code`, then what an interpreter does on its way out."""
    for descriptor, path in ((1, stdout), (2, stderr)):
        output = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(output, descriptor)
        os.close(output)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    sys.dont_write_bytecode = bool(environment.get("PYTHONDONTWRITEBYTECODE"))
    tree = environment.get("PYTHONPATH", "").split(os.pathsep)
    sys.path[:] = ["", *filter(None, tree), *interpreter_path]
    sys.argv = ["-c"]
    main = sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)
    finally:
        atexit._run_exitfuncs()


@cache
def _interpreter_path() -> list[str]:
    """`sys.path` as a fresh interpreter of this environment starts it, less its first entry (the script's place):
    this process's has the test directories pytest put first."""
    probe = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return json.loads(subprocess.run(probe, env=environment, capture_output=True, text=True, check=True).stdout)
