"""What a backend endpoint and its credentials may look like, per kind of service.

REST and GraphQL backends are http(s) URLs; a gRPC backend is `host:port`,
`grpc://host:port` (plaintext) or `grpcs://host:port` (TLS), and takes its
credentials as metadata, so an API key can only be a header with a valid
metadata name. A service may need several credentials at once (an API key and
a client id), as long as no two of them set the same header, query parameter or
cookie. Checked where plans and configurations are written, so that a gateway is
never handed something it cannot call.

A backend may be internal, but never a cloud metadata address: it would hand the
gateway host's own credentials to whoever wrote the plan. An endpoint whose host is
written as one is refused here; names that resolve to one are refused when the
gateway connects (the backends' resolver), and so are addresses written in the
service's own description (`address_problem`, where a backend is made).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from apimcp.safety.addresses import ANYTHING_BUT_METADATA, AddressRefused, parse_address

_HTTP = re.compile(r"^https?://[^\s/]+")
_HOST_PORT = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}"
_GRPC = re.compile(rf"^((grpcs?://)?{_HOST_PORT}|(dns|ipv4|ipv6|unix):\S+)$")
_GRPC_SCHEME = re.compile(r"^grpcs?://")
_METADATA_KEY = re.compile(r"^[0-9a-z_.-]+$")


def endpoint_problem(kind: str, endpoint: str) -> str | None:
    """Why `endpoint` cannot be the backend of a service of `kind` ("openapi", "graphql" or "grpc"), or None."""
    if kind == "grpc":
        if not _GRPC.match(endpoint):
            return "a gRPC backend is host:port, grpc://host:port or grpcs://host:port"
        hosts = [host for host, _ in grpc_hosts(_GRPC_SCHEME.sub("", endpoint))]
    else:
        if not _HTTP.match(endpoint):
            return "the backend endpoint must be an http:// or https:// URL"
        try:
            hosts = [urllib.parse.urlsplit(endpoint).hostname or ""]
        except ValueError as exc:  # an unclosed IPv6 bracket
            return f"the backend endpoint is not a valid URL ({exc})"
    refused = next(filter(None, map(address_problem, hosts)), None)
    return f"the backend endpoint is refused: {refused}" if refused is not None else None


def address_problem(host: str | None) -> str | None:
    """Why a backend whose host is written `host` cannot be called ("169.254.169.254 is a cloud metadata address..."),
    or None. A name is not resolved here: the backends' resolver checks what it resolves to."""
    address = parse_address(host or "")
    if address is None:
        return None
    try:
        ANYTHING_BUT_METADATA.check(host or "", [address])
    except AddressRefused as exc:
        return str(exc)
    return None


def url_address_problem(url: str) -> str | None:
    """`address_problem` of an http(s) URL's host; None for a URL that cannot be parsed (sending to it says so)."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None
    return address_problem(host)


def grpc_hosts(target: str) -> list[tuple[str, int]]:
    """The hosts (and ports) a gRPC channel to `target` dials: `host:port`, `[v6]:port`, `dns:[//authority/]host:port`,
    `ipv4:` and `ipv6:` lists of addresses; none for unix sockets."""
    scheme, _, rest = target.partition(":")
    if scheme in ("dns", "ipv4", "ipv6"):
        items = rest.rsplit("/", 1)[-1].split(",") if scheme != "dns" else [rest.rsplit("/", 1)[-1]]
    elif scheme in ("unix", "unix-abstract", "vsock"):
        return []
    else:
        items = [target]
    found: list[tuple[str, int]] = []
    for item in items:
        try:
            parts = urllib.parse.urlsplit("//" + item)
            port = parts.port or 443
        except ValueError:
            continue  # grpc will not dial it either
        if parts.hostname:
            found.append((parts.hostname, port))
    return found


def api_key_problem(kind: str, name: str, location: str) -> str | None:
    """Why an API key `name` in `location` cannot reach a backend of `kind`, or None."""
    if kind != "grpc":
        return None
    if location != "header":
        return f"gRPC carries credentials in metadata only: an API key in the {location} cannot be sent"
    key = name.lower()
    if not _METADATA_KEY.fullmatch(key) or key.endswith("-bin") or key.startswith("grpc-"):
        return f"{name!r} cannot be a gRPC metadata key (letters, digits, '-', '_', '.'; not grpc-* nor *-bin)"
    return None


def credential_slot(kind: str, fields: Mapping[str, Any]) -> tuple[str, str]:
    """Where a credential of `kind` goes: ("header", "Authorization"), ("query", "key")... Bearer, Basic and
    OAuth client credentials set the Authorization header; per-user ones the header they name (Authorization by
    default)."""
    if kind == "api_key":
        return str(fields.get("location") or "header"), str(fields["name"])
    return "header", str(fields.get("header") or "Authorization")


def clash_problem(credentials: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str | None:
    """Why credentials given as (label, kind, fields) cannot go together, or None: two of them would set the
    same header (names compared without case), query parameter or cookie."""
    seen: dict[tuple[str, str], str] = {}
    for label, kind, fields in credentials:
        location, name = credential_slot(kind, fields)
        key = (location, name.lower() if location == "header" else name)
        if key in seen:
            return f"{seen[key]} and {label} would both set the {location} {name!r}: a request carries only one"
        seen[key] = label
    return None
