"""Where a control plane may be reached over plain http://: on loopback, or when told so explicitly.

Gateways and the CLI send tokens to the control plane and gateways receive
snapshots from it; over plain HTTP across a network, anyone on the path reads the
tokens. Host names are not resolved to decide: only `localhost` and loopback
address literals count as loopback.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal(url: str, *, allow_http: bool, option: str = "--allow-http") -> str | None:
    """Why `url` may not be used to reach a control plane, or None when it may."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return None
    if parts.scheme != "http" or not parts.hostname:
        return f"{url!r} is not a control plane URL: give https://host[:port] (or http:// on loopback)"
    if allow_http or is_loopback(parts.hostname):
        return None
    return (
        f"{url} is plain HTTP to a host that is not loopback: tokens would cross the network in clear; "
        f"use https:// (run the control plane with --tls-cert and --tls-key) or pass {option} to accept the risk"
    )
