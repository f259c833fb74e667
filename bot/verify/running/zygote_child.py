"""A child the zygote forked, becoming what `python -m MODULE ARGUMENTS...` started afresh would be.

Set up as a fresh interpreter is when the parent starts it with `start_new_session`: its own session (the parent
kills its process group on a timeout), stdout and stderr in the request's output file, the request's directory as its
working directory, the request's environment, and `sys.path` laid out from it as `python -m` lays it out (the
working directory, the request's PYTHONPATH, then the interpreter's own, in place of the zygote's PYTHONPATH). Then
the module runs as `__main__` with `sys.argv` as `-m` sets it, and the child exits with the code the interpreter
would give, after what the interpreter runs on its way out (atexit: torch's compile workers are shut down by one).
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import socket
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import NoReturn


def become_child(message: bytes, connection: socket.socket, inherited: list[Callable[[], None]]) -> NoReturn:
    """Let go of the zygote's `inherited` files, set up and run the child `message` orders, exit with its code;
    `connection` is told the child's pid once it leads its session. Nothing raised here unwinds into the zygote's
    loop (which kills its children)."""
    code = 1
    try:
        for close in inherited:
            close()
        order = json.loads(message)
        os.setsid()
        output = os.open(order["output"], os.O_WRONLY | os.O_APPEND)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        zygote_path = _pythonpath(os.environ)  # before the working directory changes, as the zygote read it
        os.chdir(order["directory"])
        os.environ.clear()
        os.environ.update(order["environment"])
        interpreter_path = [entry for entry in sys.path[1:] if entry not in zygote_path]
        sys.path[:] = [os.getcwd(), *_pythonpath(os.environ), *interpreter_path]
        importlib.invalidate_caches()
        connection.send(json.dumps({"pid": os.getpid()}).encode())
        module, *arguments = order["command"]
        sys.argv = [module, *arguments]  # runpy puts the module's file first, as `-m` does
        code = _exit_code(lambda: runpy.run_module(module, run_name="__main__", alter_sys=True))
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _pythonpath(environment: Mapping[str, str]) -> list[str]:
    """PYTHONPATH's entries as the interpreter puts them on `sys.path` (absolute, from the working directory)."""
    return [os.path.abspath(entry) for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry]


def _exit_code(run: Callable[[], object]) -> int:
    """The exit code of `run` as the interpreter makes it of a `__main__` that returns or raises `SystemExit`."""
    try:
        run()
        return 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
