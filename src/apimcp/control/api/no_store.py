"""No cache keeps a REST API answer: every `/api/v1` response says `Cache-Control: no-store`.

Answers are chosen by the caller's token, and several carry what is shown once or sealed for one gateway: a new
token's value, a new organization's first token, a plan's API key, a gateway's snapshot, the long poll telling a
gateway its revision. A shared proxy or a browser cache that kept one would hand it to whoever asks next. None
of the API's answers is meant to be cached, so the rule is the API's, in one place, rather than each route's:
a new route cannot forget it, and a route's own Cache-Control gives way to it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_STORE = (b"cache-control", b"no-store")


class NoStore:
    """ASGI middleware: `Cache-Control: no-store` on every answer under `prefix`."""

    def __init__(self, app: ASGIApp, prefix: str = "/api/v1/") -> None:
        self._app = app
        self._prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self._prefix):
            await self._app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"cache-control"]
                message = {**message, "headers": [*kept, NO_STORE]}
            await send(message)

        await self._app(scope, receive, sending)
