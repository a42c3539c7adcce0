"""The request head as bytes: one write per request, refusing what aiohttp refuses to send."""

from __future__ import annotations

import re
from collections.abc import Mapping

import yarl
from aiohttp.http import SERVER_SOFTWARE

from apimcp.http1.errors import Unsendable

USER_AGENT = SERVER_SOFTWARE
"""The User-Agent aiohttp sends, so that a backend sees the same client on either lane."""
ACCEPT_ENCODING = "gzip, deflate"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")
_WITH_BODY = frozenset(("POST", "PUT", "PATCH"))
_WRITTEN_HERE = frozenset(("host", "content-length", "transfer-encoding", "connection"))


def host_header(url: yarl.URL) -> str:
    host = url.raw_host or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return host if url.port is None or url.is_default_port() else f"{host}:{url.port}"


def _token(text: str) -> bool:
    """Whether `text` is an RFC 9110 token; names of letters, digits and hyphens (nearly all) without a pattern."""
    return (text.isascii() and text.replace("-", "").isalnum()) or _TOKEN.fullmatch(text) is not None


def request_head(method: str, url: yarl.URL, headers: Mapping[str, str], body: bytes | None) -> bytes:
    """`METHOD /path?query HTTP/1.1` and the headers: `Host` (the caller's, else the URL's), the caller's, then
    the defaults it did not set; `Content-Length` from the body."""
    if not _token(method):
        raise Unsendable(f"{method!r} is not an HTTP method")
    target = url.raw_path_qs or "/"
    if not (target.isprintable() and " " not in target) and _BAD_TARGET.search(target):
        raise Unsendable("the request's path or query holds a space or a control character")
    lines = [f"{method} {target} HTTP/1.1", ""]  # the Host line goes second, once the caller's is known
    host = None
    given = set()
    for name, value in headers.items():
        if not _token(name):
            raise Unsendable(f"{name!r} is not a header name")
        if not value.isprintable() and _BAD_VALUE.search(value):  # a printable value cannot break a line
            raise Unsendable(f"the value of header {name} holds a line break or a NUL")
        lowered = name.lower()
        if lowered in _WRITTEN_HERE:
            if lowered == "host" and host is None:
                host = value
            continue  # written by this client itself
        given.add(lowered)
        lines.append(f"{name}: {value}")
    lines[1] = f"Host: {host if host is not None else host_header(url)}"
    if "accept" not in given:
        lines.append("Accept: */*")
    if "accept-encoding" not in given:
        lines.append(f"Accept-Encoding: {ACCEPT_ENCODING}")
    if "user-agent" not in given:
        lines.append(f"User-Agent: {USER_AGENT}")
    if body and "content-type" not in given:
        lines.append("Content-Type: application/octet-stream")  # as aiohttp labels bytes it is given
    if body is not None or method in _WITH_BODY:
        lines.append(f"Content-Length: {len(body) if body is not None else 0}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
