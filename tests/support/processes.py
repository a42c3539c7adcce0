"""apimcp commands run as real processes, for tests: free ports, captured output, clean stops."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2

# Ports the kernel hands out for port 0 and for outgoing connections come from its ephemeral range (32768 and up
# on Linux), so a port taken from there and let go can be taken again by any socket before the server meant for it
# binds. Ports handed out here come from below that range, each pytest-xdist worker from a block of its own.
_FIRST_PORT = 12_000
_BLOCK = 1_500
_BLOCKS = 13  # 12,000 to 31,500: below the ephemeral range


def _block_start() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    return _FIRST_PORT + (index % _BLOCKS) * _BLOCK


# A process started again does not begin where the last one did.
_offsets = itertools.count(random.randrange(_BLOCK))


def free_port() -> int:
    """A loopback port nothing listens on now, that no other test worker hands out and no outgoing connection takes."""
    start = _block_start()
    for _ in range(_BLOCK):
        port = start + next(_offsets) % _BLOCK
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))  # without SO_REUSEADDR: a port still in TIME_WAIT is passed over
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {start}..{start + _BLOCK - 1}")


def cli(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `apimcp ARGS` to completion (environment: this process's, plus `env`)."""
    return subprocess.run(
        [sys.executable, "-m", "apimcp.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        input=stdin,
        check=False,
    )


def cli_ok(*args: str, env: dict[str, str] | None = None) -> str:
    """`apimcp ARGS`, which must succeed: its standard output."""
    done = cli(*args, env=env)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def gateway_credentials(name: str, key_file: Path, env: dict[str, str]) -> str:
    """A gateway token for `name` (returned) and a gateway key registered as `name`, its private half written to
    `key_file`: what `apimcp gateway --control-plane ...` needs; `env` names the control plane and an admin token."""
    issued = cli_ok("token", "create", name, "--kind", "gateway", "-o", "json", env=env)
    cli_ok("gateway-key", "create", name, "--out", str(key_file), env=env)
    token: str = json.loads(issued)["token"]
    return token


class Background:
    """`apimcp ARGS` running until stopped; its output goes to a file the test can read."""

    def __init__(self, log: Path, *args: str, env: dict[str, str] | None = None, module: str = "apimcp.cli") -> None:
        self.log = log
        self._file = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )

    def output(self) -> str:
        return self.log.read_text()

    def wait_for_http(self, url: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the process ended (code {self.process.returncode}):\n{self.output()}")
            try:
                if httpx2.get(url, timeout=2).status_code < 500:
                    return
            except httpx2.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"{url} did not answer within {seconds} s:\n{self.output()}")

    def wait_for_port(self, port: int, seconds: float = 30) -> None:
        """Until something accepts connections on loopback `port` (for servers a plain HTTP GET cannot check)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the process ended (code {self.process.returncode}):\n{self.output()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"port {port} did not open within {seconds} s:\n{self.output()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._file.close()
        return self.process.returncode
