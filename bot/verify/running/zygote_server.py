"""The zygote's server (`zygote`): imports torch, then forks a child per request (`zygote_child`) and reports its
exit, until the parent closes the control socket; then it kills the children still running, each with its process
group. Run as `python -m bot.verify.running.zygote_server FD`, FD its end of the control socket.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
from functools import partial

from bot.verify.running.zygote_child import become_child

READY = b"ready"
MESSAGE_BYTES = 1 << 20  # a request: paths, a command and the child's environment


def serve(control: socket.socket) -> None:
    """Import what every child imports, then fork a child per request until the parent closes `control`."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401

    os.close(os.pidfd_open(os.getpid()))  # how it watches its children: without it, no zygote (fresh processes)
    control.send(READY)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, the request's socket)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is control:
                    message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, 1)
                    if not message:
                        return
                    os.set_inheritable(fds[0], False)
                    connection = socket.socket(fileno=fds[0])
                    try:
                        pid = os.fork()
                    except OSError:  # the closed socket tells the parent to start a fresh process
                        connection.close()
                        continue
                    if pid == 0:
                        inherited = [selector.close, control.close, *(other.close for _, other in running.values())]
                        become_child(message, connection, [*inherited, *(partial(os.close, fd) for fd in running)])
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
        pass  # the parent stopped watching (it killed the child): the socket's close says the rest
    connection.close()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # forked but not yet the leader of its own session
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
