"""The pages a user opens to give a credential, driven as the ASGI app they are: what a browser sends them."""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from apimcp.elicitation.broker import ElicitationBroker
from apimcp.elicitation.pages import ElicitationPages, browser_origin
from apimcp.elicitation.secrets import ElicitedSecret
from apimcp.state.pending import MemoryPendingStore
from apimcp.state.user_values import MemoryUserValueStore

pytestmark = pytest.mark.anyio

FORM = (b"content-type", b"application/x-www-form-urlencoded")


@asynccontextmanager
async def pages(public_url: str | None) -> AsyncIterator[tuple[ElicitationBroker, ElicitationPages]]:
    async with aiohttp.ClientSession() as client:
        broker = ElicitationBroker(MemoryUserValueStore(), MemoryPendingStore(), client, public_url=public_url)
        broker.use([ElicitedSecret("acme/token", "token")])
        yield broker, ElicitationPages(broker)


async def request(
    app: ElicitationPages, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes = b"",
    query: bytes = b"",
) -> tuple[int, bytes]:  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {"type": "http", "method": method, "path": path, "scheme": "https", "headers": headers,
             "query_string": query}  # fmt: skip
    await app(scope, receive, send)
    return sent[0]["status"], sent[1]["body"]


@pytest.mark.parametrize(
    "public_url", ["https://gw.example.com", "https://GW.Example.com", "https://gw.example.com:443"]
)
async def test_the_form_is_taken_from_its_own_page_however_the_public_url_is_written(public_url: str) -> None:
    """The finding: a public URL given with capitals or its default port never equalled the `Origin` a browser
    sends, so every form was refused (403)."""
    async with pages(public_url) as (broker, app):
        pending = await broker.pending.open("session s", "acme/token", "shop", "s")
        headers = [(b"host", b"gw.example.com"), (b"origin", b"https://gw.example.com"), FORM]
        status, _ = await request(app, "POST", f"/elicitation/{pending.id}", headers, b"token=abc")
        assert status == 200
        assert await broker.values.get("session s", "acme/token") is not None
        other = await broker.pending.open("session t", "acme/token", "shop", "t")
        elsewhere = [(b"host", b"gw.example.com"), (b"origin", b"https://evil.example"), FORM]
        assert (await request(app, "POST", f"/elicitation/{other.id}", elsewhere, b"token=abc"))[0] == 403


def test_origins_are_compared_as_browsers_write_them() -> None:
    assert browser_origin("HTTPS://GW.Example.com:443/base") == "https://gw.example.com"
    assert browser_origin("http://gw.example.com:8080") == "http://gw.example.com:8080"
    assert browser_origin("http://[::1]:80") == "http://[::1]"


async def test_a_form_or_an_answer_with_too_many_fields_gets_a_page_not_an_error() -> None:
    """The finding: more than 10 fields raised out of the app (a 500 and a logged traceback)."""
    async with pages(None) as (broker, app):
        pending = await broker.pending.open("session s", "acme/token", "shop", "s")
        headers = [(b"host", b"localhost"), (b"origin", b"https://localhost"), FORM]
        body = b"token=abc&" + b"&".join(b"f%d=1" % n for n in range(11))
        status, page = await request(app, "POST", f"/elicitation/{pending.id}", headers, body)
        assert status == 413 and b"too large" in page
        query = b"code=c&state=s&" + b"&".join(b"p%d=1" % n for n in range(11))
        status, page = await request(app, "GET", "/elicitation/callback", headers, query=query)
        assert status == 400 and b"not one the service sends" in page
