"""DNS-rebinding protection: which Host and Origin headers an endpoint accepts.

A browser page on an attacker's domain can resolve that domain to 127.0.0.1 and
reach a local server; checking Host and Origin stops it. The default accepts
loopback names only, which is right for a server bound to loopback; a
deployment behind a real hostname lists its own names (``"mcp.example.com"``,
``"*.example.com"``, ``"localhost:*"``) or disables the check.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from apimcp.protocol.cors import CorsPolicy

LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")


def _loopback_patterns() -> frozenset[str]:
    return frozenset([*LOOPBACK_HOSTS, *(f"{h}:*" for h in LOOPBACK_HOSTS)])


@dataclass(frozen=True, slots=True)
class TransportSecurity:
    """Allowed Host values and Origin hosts: exact names, or patterns where `*` matches anything."""

    allowed_hosts: frozenset[str] = field(default_factory=_loopback_patterns)
    allowed_origins: frozenset[str] = field(default_factory=_loopback_patterns)
    enabled: bool = True
    cors_origins: frozenset[str] = frozenset()
    """Origins (`https://app.example.com`) whose browser pages may call the endpoint (`cors.py`)."""

    @classmethod
    def disabled(cls) -> TransportSecurity:
        return cls(frozenset(), frozenset(), enabled=False)

    @classmethod
    def for_hosts(cls, hosts: Iterable[str], cors_origins: Iterable[str] = ()) -> TransportSecurity:
        """Accept these host patterns (plus loopback) as both Host and Origin host, and pages of `cors_origins`
        (which must be `http(s)://host[:port]`; ValueError otherwise)."""
        patterns = _loopback_patterns() | frozenset(h.lower() for h in hosts)
        cors = CorsPolicy.of(cors_origins)
        return cls(patterns, patterns | cors.hosts(), cors_origins=cors.origins)

    def with_cors_origins(self, origins: Iterable[str]) -> TransportSecurity:
        """The same, with the pages of `origins` allowed too (CORS and the Origin check); ValueError for one that
        is not `http(s)://host[:port]`."""
        cors = CorsPolicy.of([*self.cors_origins, *origins])
        return replace(self, allowed_origins=self.allowed_origins | cors.hosts(), cors_origins=cors.origins)

    def host_allowed(self, host: str | None) -> bool:
        if not self.enabled:
            return True
        if host is None:
            return False  # HTTP/1.1 requires Host; its absence is not a browser.
        return _matches(host.lower(), self.allowed_hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        """An absent Origin is allowed: non-browser clients do not send one."""
        if not self.enabled or origin is None:
            return True
        scheme, sep, rest = origin.lower().partition("://")
        if not sep or scheme not in ("http", "https"):
            return False
        return _matches(rest.rstrip("/"), self.allowed_origins)


@functools.lru_cache(maxsize=1024)
def _matches(value: str, patterns: frozenset[str]) -> bool:
    if value in patterns:
        return True
    return any(_glob(p).fullmatch(value) is not None for p in patterns if "*" in p)


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """`*` matches anything; every other character (brackets of IPv6 hosts included) is literal."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
