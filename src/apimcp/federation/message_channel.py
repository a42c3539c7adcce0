"""A session with an upstream MCP server over one channel that carries every message of the server's: the
2024-11-05 HTTP+SSE transport (`sse_channel.py`) and a stdio server's pipes (`stdio_channel.py`).

Requests are numbered by the channel and matched to their answers by id. What the server sends besides answers
is handled the same way whatever carries it: progress reaches the call whose token it names, resource updates
and list changes whoever listens (`ProgressRoutes`), a ping is answered, and any other request of the server's
is answered with an error (nothing on such a channel ties a request to a call, so none to a client). When the
channel ends, what waits on it is failed with `ChannelClosed` and the channel is not used again (the next call
opens another).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import aiohttp

from apimcp.federation.listener import ProgressRoutes
from apimcp.mcp_client.answers import UpstreamError, response_to

log = logging.getLogger("apimcp.federation")

NOT_IN_A_CALL = -32601
SEND_ERRORS = (UpstreamError, aiohttp.ClientError, OSError, TimeoutError)
"""What sending a message may raise, besides cancellation."""


class ChannelClosed(UpstreamError):
    """The channel ended: what waited on it is failed, and the channel is not used again."""


class NotDelivered(ChannelClosed):
    """The channel had ended before the request could be sent: the server never saw it (it may be sent again)."""


class MessageChannel(ABC):
    """A session carried by one channel: requests numbered here, answers matched by id."""

    ended_because = "the server's channel ended"
    """Said to what waited on the channel when it ended."""

    def __init__(self, routes: ProgressRoutes) -> None:
        self._routes = routes
        self._waiting: dict[int, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._telling: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        """Reads what the server sends (started by `open`); the channel ends with it."""
        self.closed = False

    @abstractmethod
    async def open(self) -> None:
        """Connect (or start the server); `UpstreamError` when there is no MCP server there."""

    @abstractmethod
    async def _send(self, message: Mapping[str, Any]) -> None:
        """Hand one message to the server (`ChannelClosed` once the channel has ended)."""

    @abstractmethod
    async def _release(self) -> None:
        """Let go of what the channel holds (its stream, its process); called by `close`, once."""

    async def request(self, method: str, params: Mapping[str, Any], within: float) -> Mapping[str, Any]:
        """The result of `method` (an `UpstreamError` for the server's error, `ChannelClosed` when the channel
        ended first)."""
        request_id = next(self._ids)
        waiting: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiting
        try:
            async with asyncio.timeout(within):  # sending counts: a server that stops reading must not hold a call
                try:
                    await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
                except ChannelClosed as exc:
                    raise NotDelivered(exc.message) from None
                return await waiting
        except (asyncio.CancelledError, TimeoutError):
            self._tell_cancelled(request_id)  # the server stops working for nobody
            raise
        finally:
            self._waiting.pop(request_id, None)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, **({"params": dict(params)} if params else {})})

    def _tell_cancelled(self, request_id: int) -> None:
        if self.closed:
            return
        params = {"requestId": request_id, "reason": "the gateway's client cancelled the call, or it timed out"}

        async def tell() -> None:
            with contextlib.suppress(*SEND_ERRORS):
                await self.notify("notifications/cancelled", params)

        task = asyncio.get_running_loop().create_task(tell())
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def _heard(self, message: object) -> None:
        """Act on one message of the server's."""
        if not isinstance(message, Mapping):
            return
        request_id = message.get("id")
        if "method" not in message and isinstance(request_id, int):
            waiting = self._waiting.get(request_id)
            if waiting is not None and not waiting.done():
                try:
                    result = response_to(message, request_id)
                except UpstreamError as exc:
                    waiting.set_exception(exc)
                else:
                    if result is not None:
                        waiting.set_result(result)
            return
        method = message.get("method")
        if "id" not in message:
            await self._routes.notified(method, message.get("params"))
        elif isinstance(method, str):
            if method == "ping":
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": {}}
            else:
                text = f"apimcp relays {method[:60]} of this server to no client"
                reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": NOT_IN_A_CALL, "message": text}}
            with contextlib.suppress(*SEND_ERRORS):
                await self._send(reply)

    def _end(self) -> None:
        self.closed = True
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(ChannelClosed(self.ended_because))
                waiting.exception()  # retrieved: the caller may already have gone

    async def close(self) -> None:
        """Stop reading, fail what waits, and release the channel."""
        reader, self._reader = self._reader, None
        try:
            if reader is not None:
                reader.cancel()
                await asyncio.wait([reader])  # whatever it ended with, its end is not the caller's
                if not reader.cancelled() and reader.exception() is not None:
                    log.warning("an MCP server's channel stopped reading: %r", reader.exception())
        finally:
            self._end()
            await self._release()
