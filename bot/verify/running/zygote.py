"""A fork server for the children of one verify run ("zygote"): it imports once what they all import, and forks
a child per request instead of starting a fresh interpreter. Its children are both trees' target workers
(`runner`) and both trees' runs of the checkout's own tests (`checkout.own_tests`: pytest with the run's plugin).

A worker spent ~87% of its ~8 CPU s importing, `torch` and `torch._dynamo` (~44% together) the same for both
trees; so does a run of the checkout's tests. The zygote imports those two and nothing that reads a per-request
setting: huggingface_hub, transformers and diffusers are imported after the fork, with the Hub offline, from the
tree the request names. It never touches CUDA, so a child initialises it as a fresh process would; a run on CUDA
forks nothing (`forks_on`).

`Zygote` is the parent's side: it starts the server (`zygote_server`) on the run's first request, with the workers'
environment less the tree (glibc's allocator and OpenMP read theirs when a process starts, so they are there from
the start), hands it each request with a socket of the request's own, and stops it when the run ends.
`start_child` is every child's one door: forked where the zygote serves it (its interpreter, its process-start
settings: `Zygote.fork`), else a fresh `python -m ...`. A forked child becomes what `python -m MODULE ARGUMENTS`
started afresh would be (`zygote_child`); it sends its pid once it leads its session, the server its exit code once
it has reaped it. The server exits when the parent's end of the control socket closes (the run is over,
interrupted, or the parent died), killing any child still running with its process group: no child outlives the
run's zygote.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

from bot.verify.running.protocol import WorkerRequest
from bot.verify.running.zygote_server import MESSAGE_BYTES, READY

READY_TIMEOUT_S = 600.0
"""How long the server may take to import torch before the run gives up on it and starts fresh processes."""


def serves(request: WorkerRequest) -> bool:
    """Whether a forked worker may run `request`: an emulated-device or CPU run of the targets (`forks_on`), not a
    real-scale case (minutes each, one worker per case: the imports are nothing to them)."""
    return forks_on(request.device) and request.scale is None


def forks_on(device: str) -> bool:
    """Whether a verify run on `device` may fork its children (the targets' workers, the checkout's own tests).

    A CUDA run starts fresh ones: nothing in the zygote may ever have touched the driver, which one GPU host is not
    enough to prove for every torch build, and there the device's time outweighs the imports.
    """
    return device != "cuda"


class ForkedChild:
    """A child the zygote forked, watched as `subprocess.Popen` is: `pid` (its process group), `poll`, `wait`."""

    def __init__(self, connection: socket.socket, pid: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self._connection = connection

    def poll(self) -> int | None:
        if self.returncode is None:
            self._receive(socket.MSG_DONTWAIT)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._connection.settimeout(timeout)
            try:
                self._receive(0)
            except TimeoutError:
                pass
            if self.returncode is None:
                self._connection.settimeout(None)  # so that `poll` never waits
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def _receive(self, flags: int) -> None:
        try:
            message = self._connection.recv(MESSAGE_BYTES, flags)
        except BlockingIOError:
            return
        # Nothing at all: the zygote died, and so has the child, which held this socket too.
        self.returncode = json.loads(message)["exit"] if message else -signal.SIGKILL
        self._connection.close()


class Zygote:
    """The parent's side: starts the server (`python` with `environment`) on the first request, forks children
    through it, stops it."""

    def __init__(self, python: Path, environment: dict[str, str], log: Path) -> None:
        self.python = python
        self.environment = environment
        self._log = log
        self._control, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()  # held while the server imports: one start, every request waits for it
        self._starting = threading.Lock()  # held while the server starts or stops: none starts once stopped
        self._stopped = False
        self._ready: bool | None = None
        self._process: subprocess.Popen | None = None

    def fork(
        self, python: Path, command: list[str], directory: Path, output: Path, environment: dict[str, str]
    ) -> ForkedChild | None:
        """`python -m COMMAND` forked in `directory` with `environment`, its output appended to `output`; None where
        the zygote cannot serve it, so that the caller starts a fresh process: another interpreter (a venv's
        `python` is a link to its base interpreter, and the link is what makes it the venv: paths are compared as
        given), other process-start settings, or a zygote that did not start or died."""
        if (
            python.absolute() != self.python.absolute()
            or _read_at_start(environment) != _read_at_start(self.environment)
            or not self.ready()
        ):
            return None
        order = {"command": command, "directory": str(directory), "output": str(output), "environment": environment}
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs:
                socket.send_fds(self._control, [json.dumps(order).encode()], [theirs.fileno()])
            reply = ours.recv(MESSAGE_BYTES)
        except OSError:
            reply = b""
        pid = json.loads(reply).get("pid") if reply else None
        if pid is None:  # the zygote died, or the child did before it could lead its session
            ours.close()
            return None
        return ForkedChild(ours, pid, [str(python), "-m", *command])

    def ready(self) -> bool:
        """Whether the server is up to fork: started on the first call (never after `stop`), waited for while it
        imports torch."""
        with self._lock:
            if self._ready is None:
                self._ready = self._start() and self._imported()
            return self._ready

    def stop(self) -> None:
        """Stop the server; any child it still runs is killed with it."""
        with self._starting:
            self._stopped = True
            self._theirs.close()
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

    def _start(self) -> bool:
        with self._starting:
            if self._stopped:
                return False
            with self._theirs as theirs, self._log.open("w") as output:
                try:
                    self._process = subprocess.Popen(
                        [str(self.python), "-m", "bot.verify.running.zygote_server", str(theirs.fileno())],
                        cwd=self._log.parent,
                        env=self.environment,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        pass_fds=[theirs.fileno()],
                        start_new_session=True,
                    )
                except OSError as error:
                    output.write(f"could not start the zygote: {error}\n")
                    return False
        return True

    def _imported(self) -> bool:
        self._control.settimeout(READY_TIMEOUT_S)
        try:
            return self._control.recv(len(READY)) == READY  # b"": it died importing
        except OSError:
            return False
        finally:
            self._control.settimeout(None)


def start_child(
    python: Path,
    command: list[str],
    directory: Path,
    output: Path,
    environment: dict[str, str],
    zygote: Zygote | None,
) -> subprocess.Popen | ForkedChild:
    """`python -m COMMAND` in `directory` with `environment`, its stdout and stderr in `output`, leading a session of
    its own (a timeout kills its process group): forked by `zygote` where it serves it (`Zygote.fork`), else a fresh
    interpreter."""
    with output.open("w") as log:
        child = zygote.fork(python, command, directory, output, environment) if zygote is not None else None
        if child is not None:
            return child
        return subprocess.Popen(
            [str(python), "-m", *command],
            cwd=directory,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


_READ_AFTER_THE_FORK = (
    "PYTHONPATH",
    "PYTEST_CURRENT_TEST",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
)
"""Variables a child is handed with its request, which nothing the zygote ran has read: the path (the child lays it
out), the phase of the test pytest is in (it changes under a zygote that outlives one), the Hub's offline switches
(read by huggingface_hub, transformers and datasets on import, which the zygote never imports), and this project's
own `CODEMOD_*` (a worker's launch time, the own-tests plugin's files)."""


def _read_at_start(environment: dict[str, str]) -> dict[str, str]:
    """The variables a process may have read before the fork: the zygote's must be the request's."""
    return {
        key: value
        for key, value in environment.items()
        if key not in _READ_AFTER_THE_FORK and not key.startswith("CODEMOD_")
    }
