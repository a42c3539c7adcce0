"""How long an MCP server may take to answer one request of a call: the plan's timeout, not counting the time its
client takes to answer what the server asked meanwhile.

A session-era server asks the user (an elicitation, say) on the stream of the call's POST, and waits: a person
may well take longer than the plan gives a server. The clock stops while the client is asked (which the engine
bounds by its own timeout for a client's answer) and goes on with what was left when the answer is relayed.
Stopped, it cannot expire mid-question: an answer is never relayed for a call already given up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class AnswerDeadline:
    __slots__ = ("_seconds", "_timeout")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._timeout: asyncio.Timeout | None = None

    def running(self) -> asyncio.Timeout:
        """The request's time, from now (`async with` it): TimeoutError when it runs out. (The timeout itself, not
        a wrapper: every call of a federated tool pays for this.)"""
        self._timeout = asyncio.timeout(self._seconds)
        return self._timeout

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """While the client is asked: the clock stopped, then restarted with what was left."""
        timeout = self._timeout
        when = timeout.when() if timeout is not None else None
        if timeout is None or when is None:
            yield
            return
        loop = asyncio.get_running_loop()
        left = when - loop.time()
        timeout.reschedule(None)
        try:
            yield
        finally:
            if not timeout.expired():
                timeout.reschedule(loop.time() + max(left, 0.0))
