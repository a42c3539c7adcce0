"""How HTTP backend failures read: each names the backend and the cause, TLS ones included."""

from __future__ import annotations

import errno
import gzip
import ssl

import aiohttp
import pytest
from aiohttp import web

from apimcp.backends.http_common import exception_failure, read_limited
from apimcp.backends.rest import close_session, new_session
from tests.support.live_aiohttp import serving_here

HTTPS = "https://api.example.com:8443/v1/items"


def message(exc: Exception, url: str = HTTPS) -> str:
    return exception_failure(exc, url, 5).message


def test_a_reset_or_a_close_over_tls_mentions_client_certificates() -> None:
    reset = aiohttp.ClientOSError(errno.ECONNRESET, "Connection reset by peer")
    assert message(reset) == (
        "The connection to the backend failed (api.example.com:8443): connection reset by peer (over TLS, a server "
        "that requires a client certificate does this when it gets none)"
    )
    closed = message(aiohttp.ServerDisconnectedError())
    assert closed.startswith("The backend closed the connection without answering (api.example.com:8443) (over TLS")
    assert message(aiohttp.ServerDisconnectedError(), "http://api.example.com:8080/x") == (
        "The backend closed the connection without answering (api.example.com:8080)"
    )


def test_a_tls_alert_is_named() -> None:
    alert = ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    alert.reason = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    wrapped = aiohttp.ClientOSError(*alert.args)
    wrapped.__cause__ = alert
    assert message(wrapped) == (
        "The TLS connection with the backend failed (api.example.com:8443): TLSV13_ALERT_CERTIFICATE_REQUIRED"
    )


@pytest.mark.anyio
async def test_a_compressed_answer_is_bounded_by_what_it_expands_to() -> None:
    """The finding: a gzip body's Content-Length (what travels, 100 KB) was checked against the bound, then the body
    read whole, decompressed without a bound (100 MiB, here 8 MiB against a bound of 1 MiB)."""
    bomb = gzip.compress(b"[" + b"0," * (4 * 2**20) + b"0]")
    plain = b'{"ok": true}'

    async def answer(request: web.Request) -> web.Response:
        if request.path == "/bomb":
            return web.Response(body=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        return web.Response(body=plain, content_type="application/json")

    app = web.Application()
    app.router.add_get("/{name}", answer)
    session = new_session()
    try:
        async with serving_here(app) as port:
            async with session.get(f"http://127.0.0.1:{port}/bomb") as response:
                assert response.content_length is not None and response.content_length < 2**20
                assert await read_limited(response, 2**20) is None
            async with session.get(f"http://127.0.0.1:{port}/plain") as response:
                assert await read_limited(response, 2**20) == plain
    finally:
        await close_session(session)
