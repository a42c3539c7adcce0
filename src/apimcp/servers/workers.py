"""Several processes serving one port (`--workers N`), so that one machine's cores are all used.

This process binds the port, forks the workers and supervises them. Where the system has `SO_REUSEPORT`
(Linux), this process only holds the port, and each worker listens on it with a socket of its own: the kernel
spreads new connections over the workers by their addresses. A listening socket they all inherited (elsewhere)
lets the first worker that wakes take a whole burst of connections, as asyncio and uvloop accept every one
waiting: wrk's 64 went 62 to one of two workers, 2 to the other (bench/README.md), and that worker's core
bounded the rate. SIGTERM or SIGINT is passed on, and each worker stops
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


LISTEN_BACKLOG = 2048
REUSE_PORT: bool = hasattr(socket, "SO_REUSEPORT")


def port_socket(host: str, port: int, *, listen: bool = True, reuse_port: bool = False) -> socket.socket:
    """A socket bound to host:port (port 0: one the system picks), listening unless `listen` is false."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
        if listen:
            sock.listen(LISTEN_BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def run_workers(count: int, host: str, port: int, start: Callable[[], None]) -> int:
    """Run `start` (a blocking server) in `count` worker processes on host:port until stopped; the exit code."""
    if not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"--workers is between 1 and {MAX_WORKERS}")
    # held here before any worker starts: a port in use fails now, and is the workers' until they stop
    sock = port_socket(host, port, listen=not REUSE_PORT, reuse_port=REUSE_PORT)
    address = sock.getsockname()
    children: dict[int, int] = {}
    stopping: list[int] = []

    def spawn(index: int) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os._exit(_worker(index, sock, address[0], address[1], start))
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


def _worker(index: int, held: socket.socket, host: str, port: int, start: Callable[[], None]) -> int:
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.environ["APIMCP_WORKER"] = str(index)
    if REUSE_PORT:
        held.close()  # the supervisor's; this worker listens on a socket of its own
        try:
            held = port_socket(host, port, reuse_port=True)
        except OSError:
            traceback.print_exc()
            return 1
    lifecycle.inherit_socket(held)
    try:
        start()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0
