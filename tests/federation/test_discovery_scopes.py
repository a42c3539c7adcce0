"""What OAuth discovery finds for an MCP server is shared by the secrets that discover from it, but each secret asks
for its own scopes: a read-only secret never sends its users to grant another secret's write scope."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web

from apimcp.elicitation.discovery import OAuthDiscovery
from apimcp.elicitation.secrets import OAuthClient, elicited_secret
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio
CALLBACK = "https://gateway.example/connect/callback"


def _server(registrations: list[dict[str, Any]]) -> web.Application:
    """An MCP server that is its own authorization server, supporting two scopes and dynamic registration."""

    async def mcp(request: web.Request) -> web.Response:
        return web.Response(status=401)

    async def resource(request: web.Request) -> web.Response:
        base = f"http://{request.host}"
        return web.json_response({"resource": f"{base}/mcp", "authorization_servers": [base],
                                  "scopes_supported": ["notes.read", "notes.write"]})  # fmt: skip

    async def metadata(request: web.Request) -> web.Response:
        base = f"http://{request.host}"
        return web.json_response({
            "issuer": base, "authorization_endpoint": f"{base}/authorize", "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register", "code_challenge_methods_supported": ["S256"],
        })  # fmt: skip

    async def register(request: web.Request) -> web.Response:
        registrations.append(await request.json())
        return web.json_response({"client_id": f"client-{len(registrations)}"}, status=201)

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_get("/.well-known/oauth-protected-resource/mcp", resource)
    app.router.add_get("/.well-known/oauth-authorization-server", metadata)
    app.router.add_post("/register", register)
    return app


def _secret(organization: str, scopes: list[str], server: str) -> OAuthClient:
    raw = {"id": f"sec_{organization}", "name": "notes", "kind": "user_oauth",
           "fields": {"discover": True, "scopes": scopes}}  # fmt: skip
    oauth = elicited_secret(organization, raw, server).oauth
    assert oauth is not None
    return oauth


async def test_each_secret_asks_for_its_own_scopes_from_what_discovery_found_once() -> None:
    """The finding: what discovery found was kept whole, scopes included, per server and callback: the second
    secret of a server (another plan's, another organization's) asked its users for the first one's scopes, and
    a secret whose scopes were narrowed kept asking for the old ones for an hour."""
    registrations: list[dict[str, Any]] = []
    async with serving_here(_server(registrations)) as port, aiohttp.ClientSession() as http:
        server = f"http://127.0.0.1:{port}/mcp"
        discovery = OAuthDiscovery(http)
        writer = await discovery.client_for(_secret("org-a", ["notes.read", "notes.write"], server), CALLBACK)
        reader = await discovery.client_for(_secret("org-b", ["notes.read"], server), CALLBACK)
        narrowed = await discovery.client_for(_secret("org-a", ["notes.read"], server), CALLBACK)
        unsaid = await discovery.client_for(_secret("org-c", [], server), CALLBACK)
    assert writer.scopes == ("notes.read", "notes.write")
    assert reader.scopes == narrowed.scopes == ("notes.read",)
    assert unsaid.scopes == ("notes.read", "notes.write")  # none configured: what the server supports
    assert {client.client_id for client in (writer, reader, narrowed, unsaid)} == {"client-1"}  # found once
    assert reader.token_url == f"http://127.0.0.1:{port}/token" and reader.discover_from is None
    # registered for what the server supports, not for the first secret's scopes
    assert [registration.get("scope") for registration in registrations] == ["notes.read notes.write"]
