"""What a 2026-07-28 upstream tells outside the request it answers: a `subscriptions/listen` stream the gateway
holds open with it.

A stateless server has no session and so no GET stream: it tells that its lists changed, and that a subscribed
resource was updated, on the streams its clients open with `subscriptions/listen`. The gateway opens one per
server it calls statelessly (over the listeners' small connection pool), asking for every list change the
server says it can tell and for the resources the gateway's own clients subscribed to (at most `MAX_URIS`):
what arrives goes to whoever listens (`ProgressRoutes.notified`: the runtime hears list changes, the endpoints
resource updates). A new subscription opens the stream again with the new set. A stream the server ends, or
that breaks, is opened again (with the headers of the plan's latest call), until it fails `MAX_RESTARTS` times
in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp

from apimcp.federation import era as eras
from apimcp.federation.listener import MAX_EVENT_BYTES, MAX_URI, ProgressRoutes
from apimcp.mcp_client.sse import EventTooLarge, messages

log = logging.getLogger("apimcp.federation")

MAX_URIS = 100
ACKNOWLEDGE_SECONDS = 5.0
MAX_RESTARTS = 3
FIRST_PAUSE_SECONDS = 2.0
"""The pause before the stream is opened again after a failure, doubled with each failure in a row (30 s at most)."""
STEADY_SECONDS = 30.0
"""An acknowledged stream that lasted this long starts the count of failures again; one the server closes sooner
counts as a failure (a server that acknowledges and hangs up would be asked again every 2 s for ever)."""
_LIST_CHANGES = {"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"}
_STREAM = aiohttp.ClientTimeout(total=None, sock_connect=10)


class UpstreamSubscription:
    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        era: eras.Era,
        headers: Mapping[str, str],
        routes: ProgressRoutes,
        tls: ssl.SSLContext | bool,
    ) -> None:
        self._http = http
        self._url = url
        self._era = era
        self._headers = dict(headers)
        self._routes = routes
        self._ssl = tls
        self._uris: dict[str, None] = {}
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._acknowledged = asyncio.Event()
        """Set once the stream open now is acknowledged by the server."""
        self._lists = {
            key: True
            for feature, key in _LIST_CHANGES.items()
            if isinstance(era.capabilities.get(feature), Mapping) and era.capabilities[feature].get("listChanged")
        }
        self._subscribes = isinstance(era.capabilities.get("resources"), Mapping) and bool(
            era.capabilities["resources"].get("subscribe")
        )

    def use(self, headers: Mapping[str, str], url: str) -> None:
        """Open the next stream with these headers and URL (the plan's own credential as its latest call sent it: a
        token that expires is renewed by the calls)."""
        self._headers, self._url = dict(headers), url

    def start(self) -> None:
        """Listen, if the server says it tells anything worth hearing."""
        if self._lists or self._uris:
            self._restart()

    async def subscribe(self, uri: str) -> bool:
        """Follow `uri` too: the stream is opened again with it, and this returns once the server acknowledged it
        (or after `ACKNOWLEDGE_SECONDS`); False when the server takes no subscriptions or the stream follows
        `MAX_URIS` already."""
        if not self._subscribes or len(uri) > MAX_URI or (uri not in self._uris and len(self._uris) >= MAX_URIS):
            return False
        if uri not in self._uris:
            self._uris[uri] = None
            self._restart()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ACKNOWLEDGE_SECONDS):
                    await self._acknowledged.wait()
        return True

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _restart(self) -> None:
        self.stop()
        self._acknowledged = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(self._acknowledged))

    async def _run(self, acknowledged: asyncio.Event) -> None:
        failures = 0  # in a row: a stream acknowledged and kept `STEADY_SECONDS` starts the count again
        loop = asyncio.get_running_loop()
        while failures <= MAX_RESTARTS:
            since: float | None = None  # when this stream was acknowledged
            notifications: dict[str, Any] = dict(self._lists)
            if self._uris:
                notifications["resourceSubscriptions"] = list(self._uris)
            request_id = next(self._ids)
            listen = eras.call(self._era, request_id, "subscriptions/listen", {"notifications": notifications}, {})
            headers = {**listen.headers, **self._headers, "Accept": "text/event-stream"}
            try:
                async with self._http.post(
                    self._url, data=listen.body, headers=headers, ssl=self._ssl, timeout=_STREAM, allow_redirects=False
                ) as response:
                    if response.status != 200 or response.content_type != "text/event-stream":
                        log.info("an MCP server refused subscriptions/listen (HTTP %d)", response.status)
                    else:
                        async for message in messages(response, MAX_EVENT_BYTES):
                            if not isinstance(message, Mapping) or "id" in message:
                                continue
                            if message.get("method") == "notifications/subscriptions/acknowledged":
                                acknowledged.set()
                                since = loop.time() if since is None else since
                            else:
                                await self._routes.notified(message.get("method"), message.get("params"))
            except (aiohttp.ClientError, TimeoutError, EventTooLarge) as exc:
                log.info("an MCP server's subscriptions/listen stream ended: %s", type(exc).__name__)
            if since is not None and loop.time() - since >= STEADY_SECONDS:
                failures = 0
            failures += 1
            await asyncio.sleep(min(FIRST_PAUSE_SECONDS * 2 ** (failures - 1), 30))
        log.warning("an MCP server's subscriptions/listen stream failed %d times in a row; not opened again until a "
                    "new subscription", failures)  # fmt: skip
