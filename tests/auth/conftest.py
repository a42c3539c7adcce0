"""A real OpenID provider (oidc-provider) and gateways whose expositions take its tokens."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.gateway.conftest import ECHO_SPEC, gateway_of, live_echo_gateway

__all__ = ["ECHO_SPEC"]
from tests.support.idp import Idp, client, running_idp
from tests.support.live_server import live_app

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
SERVICE = "svc"
SERVICE_SECRET = "svc-secret-0123456789"
INTROSPECTOR = "gateway-introspection"
INTROSPECTOR_SECRET = "introspection-secret-0123456789"
DESKTOP = "desktop-client"
DESKTOP_SECRET = "desktop-secret-0123456789"
REDIRECT = "http://127.0.0.1:9/oauth/callback"
"""A client's redirect URI, never served: the test's browser stops when the provider sends it there."""
EXCHANGER = "gateway-exchange"
EXCHANGER_SECRET = "exchange-secret-0123456789"


def static_clients() -> list[dict[str, object]]:
    return [
        client(SERVICE, SERVICE_SECRET, grants=["client_credentials"]),
        client(INTROSPECTOR, INTROSPECTOR_SECRET, grants=["client_credentials"]),
        client(EXCHANGER, EXCHANGER_SECRET, grants=["client_credentials", TOKEN_EXCHANGE]),
        client(DESKTOP, DESKTOP_SECRET, grants=["authorization_code", "refresh_token"], redirect_uris=[REDIRECT]),
    ]


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    """The provider; resources whose URL contains `opaque` get opaque access tokens, the others JWTs."""
    with running_idp(static_clients(), opaque=["opaque"]) as provider:
        yield provider


def oauth_config(issuer: str, extra_exposition: str = "", extra_service: str = "", oauth: str = "") -> str:
    """A gateway with the echo service exposed twice: `echo` (JWT tokens) and `other` (a second exposition)."""
    return f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    backend: {{backend}}
    timeout: 5
{extra_service}
expositions:
  echo:
    services: [echo]
    audit: true
    auth:
      oauth: {{issuers: ["{issuer}"], scopes: [mcp:read], tool_scopes: {{delete_item: [mcp:write]}} {oauth}}}
{extra_exposition}
  other:
    services: [echo]
    auth:
      oauth: {{issuers: ["{issuer}"]}}
server:
  fetch_allow: [127.0.0.1]
"""


@contextmanager
def live_gateway_of(config_text: str, tmp: Path, port: int = 0) -> Iterator[str]:
    """A gateway built from `config_text`, served on loopback (at `port`, if given): its base URL."""
    with live_app(lambda: gateway_of(config_text, tmp), port=port) as base:
        yield base.replace("//localhost:", "//127.0.0.1:")


live_oauth_gateway = live_echo_gateway
