"""Which peers a server believes when `X-Forwarded-For` and `X-Forwarded-Proto` say whom a request is from and
how it came in.

uvicorn believes both, by default, from 127.0.0.1 (or whatever its own `FORWARDED_ALLOW_IPS` variable names):
any process on the host, or a proxy there that passes a client's headers on, then chooses the client address
a request is seen from (anonymous callers' rate-limit buckets, audit events) and its scheme (the URLs of OAuth
resource metadata and token audiences). Every apimcp server believes them from no one unless the operator names
the proxies in front (`APIMCP_FORWARDED_ALLOW_IPS`, `--forwarded-allow-ips`): then uvicorn takes the client
from the right of `X-Forwarded-For`, skipping the addresses of the proxies named.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

ANY_PEER = "*"
MAX_ENTRIES = 1000


@dataclass(frozen=True, slots=True)
class ForwardedHeaders:
    allow_ips: str = ""
    """The proxies whose forwarded headers are believed: addresses and CIDR networks, comma-separated, or `*` for
    any peer; empty, none (each request is from its peer, with the scheme of the connection)."""

    def __post_init__(self) -> None:
        trusted_proxies(self.allow_ips)

    @property
    def trusted(self) -> tuple[str, ...]:
        return trusted_proxies(self.allow_ips)


def trusted_proxies(text: str) -> tuple[str, ...]:
    """The entries of a comma-separated list of addresses and networks, or `*` alone; ValueError naming the wrong
    entry otherwise."""
    entries = tuple(entry.strip() for entry in text.split(",") if entry.strip())
    if len(entries) > MAX_ENTRIES:
        raise ValueError(f"at most {MAX_ENTRIES} proxy addresses or networks, not {len(entries)}")
    if ANY_PEER in entries:
        if len(entries) > 1:
            raise ValueError("* (any peer) goes alone, not with addresses")
        return entries
    for entry in entries:
        try:
            ipaddress.ip_network(entry)  # an address, or a network written without host bits
        except ValueError:
            raise ValueError(
                f"{entry!r} is not an IP address or a CIDR network (10.0.0.5, 10.0.0.0/8: a network's host bits "
                "are zeros), nor * for any peer"
            ) from None
    return entries


def proxy_settings(forwarded: ForwardedHeaders) -> dict[str, Any]:
    """The uvicorn.Config arguments that believe forwarded headers from the proxies named, and from no one else."""
    trusted = forwarded.trusted
    if not trusted:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": list(trusted)}
