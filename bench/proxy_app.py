"""The practical limit of an MCP -> REST gateway in Python: a bare JSON-RPC to HTTP proxy.

It answers every POST as a 2026-07-28 `tools/call` of `get_item`, calling the backend
through one shared aiohttp session, with no validation, no dialects, no ladder.
Run with ``BACKEND=http://127.0.0.1:PORT uvicorn bench.proxy_app:app``.
"""

from __future__ import annotations

import os
from typing import Any

import aiohttp
import orjson

BACKEND = os.environ.get("BACKEND", "http://127.0.0.1:8081")
_session: aiohttp.ClientSession | None = None


async def read_body(receive: Any) -> bytes:
    """The whole body of an ASGI request (the benchmark apps' only parsing step)."""
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


async def app(scope: Any, receive: Any, send: Any) -> None:
    global _session  # noqa: PLW0603 - one session per process, created inside its loop
    if scope["type"] != "http":
        return
    request = orjson.loads(await read_body(receive))
    if _session is None:
        _session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256))
    item = request["params"]["arguments"]["itemId"]
    async with _session.get(f"{BACKEND}/items/{item}") as upstream:
        data = await upstream.read()
    value = orjson.loads(data)
    result = {"content": [{"type": "text", "text": data.decode()}], "structuredContent": value, "isError": False}
    payload = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
