"""An exposition as an OAuth protected resource: its URLs, its metadata (RFC 9728) and its challenges.

An exposition answers at several paths (canonical, by id, by service coordinates); each is a URL a client may
have been given, and so a resource identifier a token may be issued for (RFC 8707). The metadata served for
a path names that path's URL as `resource`, because clients check that it matches the URL they use (RFC 9728
section 3.3). Which paths lead to the exposition is the routing table's to say (`gateway.routing`): a path
shared by several expositions (the version URL of a service) names one of them at a time, and only that one
accepts tokens issued for it.

URLs are built on the gateway's public origin (`public_url`) when one is set, and otherwise on the scheme and
`Host` of the request (the last Host header, the one the DNS-rebinding allow-list checks; the gateway checks
it before any token). Without `public_url` the Host must also name the port the request came in on: the
allow-list lets `localhost:*` through, and a token issued for another server on this host names its port. Set
`public_url` when the allow-list is broad, or behind a proxy or port mapping that changes the scheme, host or
port.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apimcp.auth.settings import OAuthSettings
from apimcp.protocol.caller import request_host

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def request_origin(scheme: str, headers: Iterable[tuple[bytes, bytes]], public_url: str | None) -> str:
    """`https://mcp.example.com`: the configured public origin, else the request's scheme and Host."""
    if public_url:
        return public_url.rstrip("/")
    return f"{scheme}://{(request_host(headers) or 'localhost').lower()}"


DEFAULT_PORTS = {"http": 80, "https": 443}
_PORT = re.compile(r"[0-9]{1,5}")


def named_port(host: str, scheme: str) -> int | None:
    """The port a Host value names: its own, or the scheme's default when it names none; None when unreadable."""
    after = host.rpartition("]")[2] if host.startswith("[") else host  # an IPv6 literal's colons are no port
    given = after.rpartition(":")[2] if ":" in after else ""
    if not given:
        return DEFAULT_PORTS.get(scheme)
    return int(given) if _PORT.fullmatch(given) else None


def foreign_port(scope: Mapping[str, Any]) -> str | None:
    """Why the request's Host cannot name this server's origin (it names another port than the one the request came
    in on), or None. A server that does not say its port (not a TCP socket) leaves the Host as it is."""
    server = scope.get("server")
    port = server[1] if server else None
    named = named_port(request_host(scope["headers"]) or "", scope["scheme"])
    if port is None or named == port:
        return None
    return (
        f"The Host header names port {named if named is not None else '(unreadable)'}, and this request came in on "
        f"port {port}: access tokens are issued for this server's own URLs (set --public-url to the origin clients "
        "use, when a proxy or a port mapping stands in front)"
    )


MAX_VIEWS = 64


@dataclass(frozen=True, slots=True)
class ExpositionResource:
    """What makes an exposition a protected resource, whatever the request: its settings and name (which paths
    lead to it is the routing table's to say)."""

    settings: OAuthSettings
    name: str
    public_url: str | None = None
    _views: dict[tuple[str, str, tuple[str, ...]], ProtectedResource] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The resource as seen at each (origin, path, served paths), built once (a few per exposition)."""

    def misdirected(self, scope: Mapping[str, Any]) -> str | None:
        """Why the request's origin is not this server's (without `public_url`, a Host naming another port)."""
        return None if self.public_url else foreign_port(scope)

    def at(
        self, scheme: str, headers: Iterable[tuple[bytes, bytes]], path: str, served: tuple[str, ...] = ()
    ) -> ProtectedResource:
        """The resource as the request that used `path` sees it; `served`: the paths that lead to the exposition
        now, whose URLs a token's `aud` may name (a view made for its challenges alone needs none)."""
        origin = request_origin(scheme, headers, self.public_url)
        key = (origin, path, served)
        view = self._views.get(key)
        if view is None:
            if len(self._views) >= MAX_VIEWS:  # Host headers are the client's: never an unbounded table
                self._views.clear()
            accepted = frozenset(origin + p.rstrip("/") for p in served) | frozenset(self.settings.audiences)
            view = ProtectedResource(origin, path, self.settings, self.name, accepted)
            self._views[key] = view
        return view


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """One exposition's resource identifiers on one origin, with its OAuth settings."""

    origin: str
    path: str
    """The path this request used."""
    settings: OAuthSettings
    name: str
    accepted: frozenset[str] = frozenset()
    """What a token's `aud` may name: the URLs that lead to the exposition now on this origin, and the configured
    audiences."""

    @property
    def url(self) -> str:
        return self.origin + self.path.rstrip("/")

    @property
    def metadata_url(self) -> str:
        return self.origin + WELL_KNOWN + self.path.rstrip("/")

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 document for this path."""
        document: dict[str, Any] = {
            "resource": self.url,
            "authorization_servers": list(self.settings.issuers),
            "bearer_methods_supported": ["header"],
            "resource_name": self.name,
        }
        scopes = self.settings.all_scopes()
        if scopes:
            document["scopes_supported"] = list(scopes)
        return document

    def challenge(self, error: str | None = None, description: str | None = None,
                  scopes: Sequence[str] | None = None) -> bytes:  # fmt: skip
        """A `WWW-Authenticate: Bearer …` value pointing to the metadata (RFC 6750, RFC 9728, MCP SEP-835)."""
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
        if description is not None:
            parts.append(f'error_description="{_quoted(description)}"')
        wanted = self.settings.scopes if scopes is None else scopes
        if wanted:
            parts.append(f'scope="{" ".join(wanted)}"')
        parts.append(f'resource_metadata="{_quoted(self.metadata_url)}"')
        return ("Bearer " + ", ".join(parts)).encode("latin-1", "replace")


def _quoted(text: str) -> str:
    """Text fit for a quoted-string: no quotes, backslashes or control characters."""
    return "".join(c for c in text if c not in '"\\' and 0x20 <= ord(c) < 0x7F)
