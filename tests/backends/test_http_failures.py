"""How HTTP backend failures read: each names the backend and the cause, TLS ones included."""

from __future__ import annotations

import errno
import gzip
import ssl

import aiohttp
import pytest
import yarl
from aiohttp import web

from apimcp.backends.base import Failure
from apimcp.backends.credentials import Bearer
from apimcp.backends.http_common import exception_failure, read_limited
from apimcp.backends.lane import first_hop
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.importers.openapi import import_openapi
from tests.gateway.conftest import ECHO_SPEC
from tests.support.live_aiohttp import serving_here

HTTPS = "https://api.example.com:8443/v1/items"
ECHO = import_openapi(str(ECHO_SPEC))
TOKEN = "sup3r-secret-token-value"


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


@pytest.mark.anyio
async def test_a_content_coding_aiohttp_leaves_as_it_came_is_refused() -> None:
    """The finding: an answer in a coding aiohttp does not undo (stacked `gzip, gzip`, `br`) reached the client as
    it came, past the masking of secrets (HEAD, forms and https go through aiohttp)."""
    twice = gzip.compress(gzip.compress(b'{"token": "s3cr3t"}'))

    async def answer(request: web.Request) -> web.Response:
        coding = "br" if request.path == "/br" else "gzip, gzip"
        return web.Response(body=twice, headers={"Content-Type": "application/json", "Content-Encoding": coding})

    app = web.Application()
    app.router.add_route("*", "/{name}", answer)
    session = new_session()
    try:
        async with serving_here(app) as port:

            async def sent(path: str) -> object:
                form = aiohttp.FormData({"a": "b"})  # a form goes through aiohttp, not the lean client
                url = yarl.URL(f"http://127.0.0.1:{port}{path}")
                return await first_hop(session, "POST", url, {}, form, public_url="", tls=True, max_bytes=2**20,
                                       client_timeout=aiohttp.ClientTimeout(total=5), timeout_seconds=5)  # fmt: skip

            got = await sent("/twice")
            assert isinstance(got, Failure), got
            assert got.message == "The backend answered in a content coding this gateway does not read (gzip, gzip)"
            with pytest.raises(aiohttp.ClientError):  # aiohttp refuses one it knows but cannot undo (no Brotli)
                await sent("/br")
    finally:
        await close_session(session)


@pytest.mark.anyio
async def test_an_unread_coding_is_refused_on_every_hop_x_gzip_included() -> None:
    """The finding: a redirected hop was read without looking at its coding, and `x-gzip`, which aiohttp does not
    undo, was taken for one it does: the backend's echo of the caller's token reached the client gzipped, past
    the masking of secrets."""

    async def answer(request: web.Request) -> web.Response:
        if request.path == "/v1/items/1":
            raise web.HTTPFound("/v1/coded")
        echoed = f'{{"auth": "{request.headers.get("Authorization")}"}}'.encode()
        headers = {"Content-Type": "application/json", "Content-Encoding": "x-gzip"}
        return web.Response(body=gzip.compress(echoed), headers=headers)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    session = new_session()
    try:
        async with serving_here(app) as port:
            backend = RestBackend(ECHO, session, base_url=f"http://127.0.0.1:{port}/v1", credentials=Bearer(TOKEN))
            operation = ECHO.operation("get_item")
            assert operation is not None
            got = await backend.call(operation, {"itemId": "1"})
            assert got == Failure("The backend answered in a content coding this gateway does not read (x-gzip)")
            form = aiohttp.FormData({"a": "b"})  # through aiohttp from the first hop
            url = yarl.URL(f"http://127.0.0.1:{port}/v1/coded")
            got = await first_hop(session, "POST", url, {}, form, public_url="", tls=True, max_bytes=2**20,
                                  client_timeout=aiohttp.ClientTimeout(total=5), timeout_seconds=5)  # fmt: skip
            assert got == Failure("The backend answered in a content coding this gateway does not read (x-gzip)")
    finally:
        await close_session(session)
