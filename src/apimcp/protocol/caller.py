"""Who sent a request, as the layers around the endpoint saw it.

The engine authenticates nobody. An authentication layer in front of the
endpoint (an ASGI app that checks a token) puts a `Caller` in the ASGI scope
under `CALLER_KEY`; the engine then binds what it keeps to that caller: a
session opened by one caller is unknown to every other, and a 2026-07-28
`requestState` sealed for one caller opens for no other. Handlers read the
caller, and the request's HTTP facts, from `RequestContext.source`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apimcp.protocol.batch_allowance import BATCH_ALLOWANCE_KEY, BatchAllowance

CALLER_KEY = "apimcp.caller"
"""The ASGI scope key an authentication layer sets to a `Caller`."""


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller."""

    principal: str
    """Stable across requests and unique among callers (an issuer and a subject, say)."""
    scopes: frozenset[str] = frozenset()
    subject: str | None = None
    issuer: str | None = None
    token: str | None = field(default=None, repr=False)
    """The credential as presented, for exchanges on the caller's behalf; never logged, never sent on as is."""
    expires_at: float | None = None
    """When the credential stops being valid (seconds since the epoch), if known."""
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What the verified credential says of the caller (a JWT's claims, an introspection's answer), which
    policies may read; empty when it says nothing."""


@dataclass(frozen=True, slots=True)
class RequestSource:
    """The HTTP facts of a request: who sent it, from where, with which headers."""

    caller: Caller | None = None
    client: str | None = None
    """The peer's address as the server saw it."""
    headers: Sequence[tuple[bytes, bytes]] = ()
    """Every request header, as received (names in lower case)."""
    scheme: str = "http"
    path: str = ""
    batch_allowance: BatchAllowance | None = field(default=None, repr=False, compare=False)
    """How many messages of a JSON-RPC batch the layer in front may run (`batch_allowance.py`); None: all."""

    def header(self, name: bytes) -> bytes | None:
        """The first value of header `name` (lower case), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


NO_SOURCE = RequestSource()


def request_host(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The request's Host: the last one, as the endpoint reads it (its DNS-rebinding check sees the same)."""
    host = None
    for name, value in headers:
        if name == b"host":
            host = value
    return host.decode("latin-1") if host is not None else None


def client_host(client: str | None) -> str:
    """The host a client address stands for, as limits count callers: an IPv4 address as it is, an IPv6 one by
    its /64 (one host is routinely given a whole /64, so its other addresses are free to mint), an IPv4-mapped
    IPv6 one as its IPv4 address; anything that is not an IP address (a Unix socket's path) as it is."""
    if client is None:
        return "unknown"
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(address) >> 64 << 64, 64)))  # the zone (%eth0) goes too
    return str(address)


def caller_key(principal: str | None, client: str | None) -> str:
    """Whom a per-caller limit counts (rate limits, the tasks one caller keeps): the authenticated principal,
    else the host of the client's address (`client_host`). Never a session: sessions are free to open. Behind a
    proxy every anonymous client shares the proxy's address, unless the server believes the proxy's
    X-Forwarded-For (`apimcp.servers.forwarded_headers`: by default no one's)."""
    if principal is not None:
        return "p:" + principal
    return "a:" + client_host(client)


def source_of(scope: Mapping[str, Any]) -> RequestSource:
    """The request source an ASGI scope describes."""
    client = scope.get("client")
    caller = scope.get(CALLER_KEY)
    return RequestSource(
        caller=caller if isinstance(caller, Caller) else None,
        client=str(client[0]) if client else None,
        headers=scope.get("headers", ()),
        scheme=str(scope.get("scheme", "http")),
        path=str(scope.get("path", "")),
        batch_allowance=scope.get(BATCH_ALLOWANCE_KEY),
    )
