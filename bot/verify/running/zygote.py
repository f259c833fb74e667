"""A fork server for the workers of one verify run ("zygote"): it imports once what every worker imports whatever
its tree, and forks a worker per request instead of starting a fresh interpreter.

A worker spent ~87% of its ~8 CPU s importing, `torch` and `torch._dynamo` (~44% together) the same for both
trees. The zygote imports those two and nothing that reads a per-request setting: huggingface_hub, transformers
and diffusers come after the worker has taken the Hub offline, from the tree the request names. It never touches
CUDA, so a child initialises it as a fresh process would.

`Zygote` is the parent's side: it starts the server (`python -m bot.verify.running.zygote FD`) with the workers'
environment less the tree (glibc's allocator and OpenMP read theirs when a process starts, so they are there from
the start), hands it each request with a socket of the request's own, and stops it when the run ends. The server
forks a child per request that becomes what a fresh worker is: its own session (the runner kills its process group
on a timeout), its output in the request's stderr file, the request's directory as its working directory, the
request's environment, the tree's parent first on `sys.path`, then the worker's `main`. The child sends its pid
once it leads its session; the server sends its exit code once it has reaped it. The server exits when the parent's
end of the control socket closes (the run is over, interrupted, or the parent died), killing any worker still
running: no worker outlives the run's zygote.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NoReturn

from bot.verify.running.protocol import LAUNCHED_AT, WorkerRequest

READY = b"ready"
READY_TIMEOUT_S = 600.0
"""How long the server may take to import torch before the run gives up on it and starts plain workers."""
_MESSAGE_BYTES = 1 << 20  # a request: paths and the worker's environment


def serves(request: WorkerRequest) -> bool:
    """Whether a forked worker may run `request`: an emulated-device or CPU run of the targets.

    A CUDA run starts plain workers: nothing in the zygote may ever have touched the driver, which one GPU host is
    not enough to prove for every torch build, and there the device's time outweighs the imports. So does a
    real-scale case's (minutes each, one worker per case).
    """
    return request.device != "cuda" and request.scale is None


class ForkedWorker:
    """A worker the zygote forked, watched as `subprocess.Popen` is: `pid` (its process group), `poll`, `wait`."""

    def __init__(self, connection: socket.socket, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._connection = connection

    def poll(self) -> int | None:
        if self.returncode is None:
            self._receive(socket.MSG_DONTWAIT)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._receive(0)
        return self.returncode

    def _receive(self, flags: int) -> None:
        try:
            message = self._connection.recv(_MESSAGE_BYTES, flags)
        except BlockingIOError:
            return
        # Nothing at all: the zygote died, and so has the worker, which held this socket too.
        self.returncode = json.loads(message)["exit"] if message else -signal.SIGKILL
        self._connection.close()


class Zygote:
    """The parent's side: starts the server with `environment`, forks workers through it, stops it."""

    def __init__(self, python: Path, environment: dict[str, str], log: Path) -> None:
        self.environment = environment
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()
        self._ready: bool | None = None
        self._process: subprocess.Popen | None = None
        with theirs, log.open("w") as output:
            try:
                self._process = subprocess.Popen(
                    [str(python), "-m", "bot.verify.running.zygote", str(theirs.fileno())],
                    cwd=log.parent,
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=[theirs.fileno()],
                    start_new_session=True,
                )
            except OSError as error:
                output.write(f"could not start the zygote: {error}\n")
                self._ready = False

    def fork(self, order: dict[str, str], environment: dict[str, str]) -> ForkedWorker | None:
        """A worker forked for `order` (the request file, its directory, its stderr file, the tree's parent) in
        `environment`; None where the zygote cannot serve it (it did not start, died, or was started with other
        process-start settings), so that the caller starts a plain one."""
        if not self._started() or _less_tree(environment) != _less_tree(self.environment):
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs:
                socket.send_fds(
                    self._control, [json.dumps({**order, "environment": environment}).encode()], [theirs.fileno()]
                )
            reply = ours.recv(_MESSAGE_BYTES)
        except OSError:
            reply = b""
        pid = json.loads(reply).get("pid") if reply else None
        if pid is None:  # the zygote died, or the child did before it could lead its session
            ours.close()
            return None
        return ForkedWorker(ours, pid)

    def stop(self) -> None:
        """Stop the server; any worker it still runs is killed with it."""
        try:
            self._control.shutdown(socket.SHUT_RDWR)  # also wakes a thread waiting for it to be ready
        except OSError:
            pass  # it never started
        if self._process is not None:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        self._control.close()

    def _started(self) -> bool:
        with self._lock:
            if self._ready is None:
                self._control.settimeout(READY_TIMEOUT_S)
                try:
                    self._ready = self._control.recv(len(READY)) == READY  # b"": it died importing
                except OSError:
                    self._ready = False
                self._control.settimeout(None)
            return self._ready


_PER_REQUEST = ("PYTHONPATH", LAUNCHED_AT, "PYTEST_CURRENT_TEST")
"""Variables a child is handed with its request, which nothing reads when a process starts (pytest names in the
last the phase of the test it is in, which changes under a zygote that outlives one)."""


def _less_tree(environment: dict[str, str]) -> dict[str, str]:
    """The variables a process may read when it starts: the zygote's must be the request's."""
    return {key: value for key, value in environment.items() if key not in _PER_REQUEST}


def serve(control: socket.socket) -> None:
    """Import what every worker imports, then fork a worker per request until the parent closes `control`."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401

    os.close(os.pidfd_open(os.getpid()))  # how it watches its children: without it, no zygote (plain workers)
    control.send(READY)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the request's socket)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _, _ = socket.recv_fds(control, _MESSAGE_BYTES, 1)
                    if not message:
                        return
                    os.set_inheritable(fds[0], False)
                    connection = socket.socket(fileno=fds[0])
                    try:
                        pid = os.fork()
                    except OSError:  # the closed socket tells the runner to start a plain worker
                        connection.close()
                        continue
                    if pid == 0:
                        inherited = [selector.close, control.close, *(other.close for _, other in running.values())]
                        _become_worker(message, connection, [*inherited, *(partial(os.close, fd) for fd in running)])
                    pidfd = os.pidfd_open(pid)
                    running[pidfd] = (pid, connection)
                    selector.register(pidfd, selectors.EVENT_READ)
                else:
                    pid, connection = running.pop(key.fd)
                    selector.unregister(key.fd)
                    os.close(key.fd)
                    _report_exit(pid, connection)
    finally:
        for pidfd, (pid, connection) in running.items():
            _kill_group(pid)
            os.waitpid(pid, 0)
            connection.close()
            os.close(pidfd)


def _report_exit(pid: int, connection: socket.socket) -> None:
    _, status = os.waitpid(pid, 0)
    try:
        connection.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
    except OSError:
        pass  # the parent stopped watching (it killed the worker): the socket's close says the rest
    connection.close()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # forked but not yet the leader of its own session
        os.kill(pid, signal.SIGKILL)


def _become_worker(message: bytes, connection: socket.socket, inherited: list[Callable[[], None]]) -> NoReturn:
    """The forked child: let go of the zygote's `inherited` files, set up as the runner starts a plain worker, run
    its `main`, exit with its code. Nothing raised here unwinds into the zygote's loop (which kills its workers)."""
    code = 1
    try:
        for close in inherited:
            close()
        order = json.loads(message)
        os.setsid()
        output = os.open(order["stderr"], os.O_WRONLY | os.O_APPEND)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.chdir(order["directory"])
        os.environ.clear()
        os.environ.update(order["environment"])
        # As `python -m` and PYTHONPATH lay it out: the working directory, the tree's parent, then the zygote's own.
        sys.path[:] = [order["directory"], order["tree_parent"], *sys.path[1:]]
        importlib.invalidate_caches()
        connection.send(json.dumps({"pid": os.getpid()}).encode())
        worker = importlib.import_module("bot.verify.running.worker")
        sys.argv = [worker.__file__, order["request"]]
        code = _exit_code(worker.main, sys.argv[1:])
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            # What an interpreter does on its way out (torch's compile workers are shut down by one), minus
            # unwinding into the zygote's loop.
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _exit_code(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """`main`'s exit code as `sys.exit(main(argv))` would make it."""
    try:
        return main(argv)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
