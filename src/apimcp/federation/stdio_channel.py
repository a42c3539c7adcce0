"""A local MCP server run as a child process and spoken to over its standard input and output (the stdio
transport): one JSON-RPC message per line each way, handled as on any channel (`message_channel.py`).

Only an operator's configuration file names a command (`apimcp serve CONFIG`); nothing a client, a member or
the control plane sends can start one. The child gets the environment the configuration gives it and no other
(a few harmless variables such as `PATH` and `HOME` excepted), its own process group, and no terminal. A line
longer than the answer limit ends the channel; what the child writes on stderr is logged, a bounded number of
lines per minute, cut short. Closing the channel closes the child's input, then terminates it, then kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimcp.federation.listener import ProgressRoutes
from apimcp.federation.message_channel import ChannelClosed, MessageChannel

log = logging.getLogger("apimcp.federation")

INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
"""What the child inherits from the gateway's environment: enough to find and run a program, no secrets."""
STOP_SECONDS = 2.0
"""How long a child is given to exit after its input is closed, then after it is terminated."""
SEND_SECONDS = 10.0
"""How long a line may take to be taken by the child: past it, the child is stopped."""
LOGGED_LINES_PER_MINUTE = 60
LOGGED_LINE_CHARS = 500
LAST_WORDS = 5


@dataclass(frozen=True, slots=True)
class StdioCommand:
    """How to start a stdio server: the program and its arguments, its environment and working folder."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The values of `env` read from the gateway's environment (`{env: NAME}`): masked in what the child writes."""

    def environment(self) -> dict[str, str]:
        inherited = {name: os.environ[name] for name in INHERITED if name in os.environ}
        return {**inherited, **self.env}


class StdioChannel(MessageChannel):
    ended_because = "the stdio server exited"

    def __init__(
        self,
        command: StdioCommand,
        routes: ProgressRoutes,
        *,
        max_line_bytes: int = 10 * 1024 * 1024,
        transform: Callable[[bytes], bytes] | None = None,
    ) -> None:
        super().__init__(routes)
        self._command = command
        self._max_line_bytes = max_line_bytes
        self._transform = transform
        """Applied to each line the server writes (masking credentials it echoes)."""
        self._process: asyncio.subprocess.Process | None = None
        self._writing = asyncio.Lock()
        self._stderr: asyncio.Task[None] | None = None
        self.last_words: deque[str] = deque(maxlen=LAST_WORDS)
        """The last lines the child wrote on stderr, cut short: for the operator (an import that failed says them),
        never for clients (a child may print anything there)."""

    async def open(self) -> None:
        """Start the server; `ChannelClosed` (an `UpstreamError`) when it cannot be started."""
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._command.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._command.environment(),
                cwd=self._command.cwd,
                limit=self._max_line_bytes + 1,
                start_new_session=True,  # its own process group: a signal to the gateway's does not reach it
            )
        except OSError as exc:
            raise ChannelClosed(
                f"the stdio server could not be started: {exc.strerror or type(exc).__name__}"
            ) from None
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._read())
        self._stderr = loop.create_task(self._log_stderr())

    async def _send(self, message: Mapping[str, Any]) -> None:
        process = self._process
        if self.closed or process is None or process.stdin is None:
            raise ChannelClosed(self.ended_because)
        try:
            async with asyncio.timeout(SEND_SECONDS), self._writing:  # a line at a time: calls must not interleave
                process.stdin.write(orjson.dumps(message) + b"\n")
                await process.stdin.drain()
        except TimeoutError:  # it stopped reading its input: nothing sent to it can be answered any more
            log.warning("stdio server %s stopped reading its input; stopped", self._name)
            self._signal(signal.SIGKILL)
            self._end()
            raise ChannelClosed(self.ended_because) from None
        except (ConnectionError, RuntimeError):
            raise ChannelClosed(self.ended_because) from None

    def _signal(self, number: int) -> None:
        """Send `number` to the child's whole process group (a wrapper such as npx or sh runs the server as its
        own child)."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, number)

    async def _read(self) -> None:
        assert self._process is not None
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    await self._exited()
                    return
                if self._transform is not None:
                    line = self._transform(line)
                try:
                    message = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # not a message: some servers print banners on stdout
                await self._heard(message)
        except (ValueError, asyncio.LimitOverrunError):  # a line longer than the limit
            log.warning("stdio server %s wrote a line over %d bytes; stopped", self._name, self._max_line_bytes)
        finally:
            self._end()

    async def _exited(self) -> None:
        """The child closed its output: say with what exit status, once it has exited (and its last stderr lines
        are read), waiting a moment at most."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_SECONDS):
                await process.wait()
                if self._stderr is not None:
                    await asyncio.wait([self._stderr])
        if process.returncode is not None:
            self.ended_because = f"the stdio server exited (status {process.returncode})"

    @property
    def _name(self) -> str:
        return os.path.basename(self._command.argv[0])[:60]

    async def _log_stderr(self) -> None:
        """Log what the child writes on stderr (and keep reading it, so that the child never blocks on it)."""
        assert self._process is not None
        stderr = self._process.stderr
        assert stderr is not None
        window, logged, partial = time.monotonic(), 0, b""
        while chunk := await stderr.read(65536):
            *lines, partial = (partial + chunk).split(b"\n")
            partial = partial[: LOGGED_LINE_CHARS * 4]  # a line that never ends is not kept whole
            for line in lines:
                now = time.monotonic()
                if now - window > 60:
                    window, logged = now, 0
                logged += 1
                shown = self._transform(line) if self._transform is not None else line
                text = shown.decode("utf-8", "replace").rstrip()[:LOGGED_LINE_CHARS]
                if text:
                    self.last_words.append(text)
                if logged <= LOGGED_LINES_PER_MINUTE:
                    log.info("stdio server %s: %s", self._name, text)

    async def _release(self) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                process.stdin.close()
        for stop in (None, signal.SIGTERM, signal.SIGKILL):
            if stop is not None:
                self._signal(stop)
            try:
                async with asyncio.timeout(STOP_SECONDS):
                    await process.wait()
                break
            except TimeoutError:
                continue
        self._signal(signal.SIGTERM)  # what the child left running in its group goes with it
        self._process = None
        if self._stderr is not None:
            self._stderr.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr
