"""apimcp commands run as real processes, for tests: free ports, captured output, clean stops."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
