"""Several processes serving one port (`--workers N`), so that one machine's cores are all used.

This process binds the port, forks the workers (each inherits the listening socket: the kernel hands every
new connection to one of them) and supervises them: SIGTERM or SIGINT is passed on, and each worker stops
gracefully (`apimcp.servers.lifecycle`); a worker that dies is replaced. Workers share sessions and users' values
through the state store, so they need a shared one: the CLI refuses `--workers` above 1 without it.
Workers run in process groups of their own, so a Ctrl-C in a terminal reaches them once, through here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from types import FrameType

from apimcp.servers import lifecycle

log = logging.getLogger("apimcp.servers.workers")
MAX_WORKERS = 64
_RESTART_PAUSE_SECONDS = 1.0


def listening_socket(host: str, port: int) -> socket.socket:
    """The port the workers share, bound here before any of them starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_workers(count: int, host: str, port: int, start: Callable[[], None]) -> int:
    """Run `start` (a blocking server) in `count` worker processes on host:port until stopped; the exit code."""
    if not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"--workers is between 1 and {MAX_WORKERS}")
    sock = listening_socket(host, port)
    children: dict[int, int] = {}
    stopping: list[int] = []

    def spawn(index: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os._exit(_worker(index, sock, start))
        children[pid] = index

    def stop(signum: int, _: FrameType | None) -> None:
        stopping.append(signum)
        sock.close()  # once the workers close theirs, new connections are refused (a balancer goes elsewhere)
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    for index in range(count):
        spawn(index)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    failed = 0
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid not in children:
            continue
        index = children.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        if stopping:
            failed = failed or (code if code > 0 else 0)
            continue
        log.warning("worker %d (pid %d) ended with %s; starting another", index, pid, code)
        time.sleep(_RESTART_PAUSE_SECONDS)
        if not stopping:
            spawn(index)
    sock.close()
    return failed


def _worker(index: int, sock: socket.socket, start: Callable[[], None]) -> int:
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.environ["APIMCP_WORKER"] = str(index)
    lifecycle.inherit_socket(sock)
    try:
        start()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0
