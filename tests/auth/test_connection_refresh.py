"""A user's OAuth connection to a backend, renewed with its refresh token: forgotten only when the authorization
server says the grant is dead, kept through its outages."""

from __future__ import annotations

import time

import aiohttp
import pytest
from aiohttp import web

from apimcp.elicitation.broker import CredentialRefused, ElicitationBroker
from apimcp.elicitation.secrets import ElicitedSecret, OAuthClient
from apimcp.state.owners import user_owner
from apimcp.state.pending import MemoryPendingStore
from apimcp.state.user_values import MemoryUserValueStore
from tests.support.live_aiohttp import live_aiohttp

pytestmark = pytest.mark.anyio


async def test_a_refresh_failing_for_a_while_keeps_the_connection_and_a_dead_grant_forgets_it() -> None:
    """The finding: any failure (a 503, a timeout) deleted the connection, refresh token included, so every user
    whose token expired during an outage had to connect again in a browser."""
    answers = [(503, {"error": "temporarily_unavailable"}), (200, {"access_token": "new-at", "expires_in": 3600}),
               (400, {"error": "invalid_grant"})]  # fmt: skip

    async def token(request: web.Request) -> web.Response:
        status, body = answers.pop(0)
        return web.json_response(body, status=status)

    def app() -> web.Application:
        made = web.Application()
        made.router.add_post("/token", token)
        return made

    with live_aiohttp(app) as base:
        async with aiohttp.ClientSession() as session:
            values = MemoryUserValueStore()
            broker = ElicitationBroker(values, MemoryPendingStore(), session)
            secret = ElicitedSecret("org/gh", "GitHub", oauth=OAuthClient(f"{base}/authorize", f"{base}/token",
                                                                         "cid", "csecret"))  # fmt: skip
            owner = user_owner("https://idp sub=alice")
            stale = {"token": "old-at", "expires_at": time.time() - 1, "refresh_token": "rt-alice"}
            await values.put(owner, secret.key, stale)
            with pytest.raises(CredentialRefused, match="could not be renewed just now"):
                await broker._token(owner, secret)
            assert (await values.get(owner, secret.key) or {}).get("refresh_token") == "rt-alice"  # kept
            assert await broker._token(owner, secret) == "new-at"  # the server is back
            await values.put(owner, secret.key, stale)
            assert await broker._token(owner, secret) is None  # invalid_grant: connect again
            assert await values.get(owner, secret.key) is None
