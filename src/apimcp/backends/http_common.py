"""What the HTTP backends (REST, GraphQL) share: size-limited reads and failure messages.

Messages name the backend's host, never the credentials (query API keys stay
out: callers pass the public URL).
"""

from __future__ import annotations

import logging
import os
import ssl

import aiohttp
import yarl

from apimcp.backends.base import Failure
from apimcp.http1.errors import BadAnswer, Dropped, NotConnected
from apimcp.safety.addresses import AddressRefused

log = logging.getLogger("apimcp.backends")

ERROR_BODY_CHARS = 2000
_CHUNK_BYTES = 64 * 1024


async def read_limited(response: aiohttp.ClientResponse, max_bytes: int) -> bytes | None:
    """The whole body, or None as soon as it exceeds `max_bytes` (decoded: a compressed body's Content-Length says
    nothing of what it expands to, so it is counted as it is read)."""
    length = response.content_length
    if length is not None and length > max_bytes:
        return None
    if length is not None and "Content-Encoding" not in response.headers:  # the length is the body's own
        return await response.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


UNDONE_BY_AIOHTTP = frozenset({"gzip", "deflate", "identity"})
"""The content codings aiohttp decodes (one, not stacked; not `x-gzip`, whatever the name says)."""


def unread_coding(response: aiohttp.ClientResponse) -> Failure | None:
    """A failure for an answer in a content coding aiohttp passes on as it came: unread, it would pass the masking
    of secrets (every hop of every backend is checked, redirected ones included)."""
    coding = response.headers.get("Content-Encoding", "").strip().lower()
    if coding and coding not in UNDONE_BY_AIOHTTP:
        return Failure(f"The backend answered in a content coding this gateway does not read ({coding[:40]})")
    return None


def too_large(max_bytes: int) -> Failure:
    return Failure(f"The backend's response is larger than the {max_bytes} bytes allowed")


TRANSIENT_STATUSES = frozenset({502, 503, 504})
"""What a gateway or an overloaded server answers when it cannot answer now (429 says when to come back: not
retried at once)."""


def status_failure(status: int, reason: str | None, body: bytes) -> Failure:
    """`HTTP 502 Bad Gateway: <the start of the body>`."""
    text = excerpt(body)
    message = f"HTTP {status} {reason or ''}".strip() + (f": {text}" if text else "")
    return Failure(message, status, transient=status in TRANSIENT_STATUSES)


def excerpt(body: bytes) -> str:
    """The start of a body, as text."""
    text = body.decode("utf-8", "replace")
    return text[:ERROR_BODY_CHARS] + ("…" if len(text) > ERROR_BODY_CHARS else "")


def origin(public_url: str) -> str:
    try:
        url = yarl.URL(public_url, encoded=True)
    except ValueError:
        return "a URL that is not valid"
    return f"{url.host}:{url.port}" if url.port else str(url.host)


def exception_failure(exc: Exception, public_url: str, timeout_seconds: float) -> Failure:
    """The Failure for an exception raised while calling the backend at `public_url`."""
    if isinstance(exc, TimeoutError):
        return Failure(f"The backend did not answer within {timeout_seconds:g} s ({origin(public_url)})",
                       transient=True)  # fmt: skip
    if isinstance(exc, AddressRefused):  # from the session's resolver: the name leads to a cloud metadata address
        return Failure(f"The backend is refused: {exc}", unsent=True)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return _unresolved(public_url)
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        reason = getattr(exc.certificate_error, "verify_message", None) or type(exc.certificate_error).__name__
        return Failure(f"The backend's TLS certificate is not trusted ({origin(public_url)}): {reason}", unsent=True)
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        reason = getattr(exc.os_error, "reason", None) or type(exc.os_error).__name__
        return Failure(f"The TLS handshake with the backend failed ({origin(public_url)}): {reason}", unsent=True)
    if isinstance(exc, aiohttp.ClientConnectorError):
        errno = exc.os_error.errno
        return _not_connected(public_url, os.strerror(errno) if errno else type(exc.os_error).__name__)
    if isinstance(exc, aiohttp.ClientOSError):
        if isinstance(exc.__cause__, ssl.SSLError):  # e.g. TLSV13_ALERT_CERTIFICATE_REQUIRED
            reason = exc.__cause__.reason or type(exc.__cause__).__name__
            return Failure(f"The TLS connection with the backend failed ({origin(public_url)}): {reason}")
        return _connection_failed(public_url, exc)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return _dropped(public_url)
    if isinstance(exc, aiohttp.InvalidURL):
        return Failure(f"The backend URL is not valid: {public_url}", unsent=True)
    log.warning("backend call to %s failed: %s", origin(public_url), type(exc).__name__)
    return Failure(f"The backend call failed: {type(exc).__name__} ({origin(public_url)})")


LANE_ERRORS = (NotConnected, Dropped, BadAnswer, AddressRefused, TimeoutError, OSError)
"""What `apimcp.http1` raises (`lane_failure` says each as `exception_failure` says aiohttp's), but `Unsendable`:
a ValueError, told as aiohttp's refusals to send are."""


def lane_failure(exc: BaseException, public_url: str, timeout_seconds: float) -> Failure:
    """The Failure for what the lean client raised while calling the backend at `public_url`: the one aiohttp's
    counterpart gets (the same words, the same transient and unsent flags)."""
    if isinstance(exc, TimeoutError | AddressRefused):
        return exception_failure(exc, public_url, timeout_seconds)
    if isinstance(exc, NotConnected):
        return _unresolved(public_url) if exc.resolving else _not_connected(public_url, exc.reason)
    if isinstance(exc, Dropped):
        return _dropped(public_url)
    if isinstance(exc, BadAnswer):
        return Failure(f"The backend's answer cannot be read ({origin(public_url)}): {exc}")
    return _connection_failed(public_url, exc)


def _unresolved(public_url: str) -> Failure:
    return Failure(f"Could not resolve the backend host {yarl.URL(public_url).host!r}", unsent=True)


def _not_connected(public_url: str, reason: str) -> Failure:
    return Failure(f"Could not connect to the backend at {origin(public_url)}: {reason.lower()}", transient=True,
                   unsent=True)  # fmt: skip


def _dropped(public_url: str) -> Failure:
    return Failure(
        f"The backend closed the connection without answering ({origin(public_url)}){_tls_hint(public_url)}",
        transient=True,
    )


def _connection_failed(public_url: str, exc: BaseException) -> Failure:
    reason = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else type(exc).__name__
    return Failure(
        f"The connection to the backend failed ({origin(public_url)}): {reason.lower()}{_tls_hint(public_url)}",
        transient=True,
    )


def _tls_hint(public_url: str) -> str:
    # TLS 1.3 servers refuse a missing client certificate after the handshake: an alert, a reset or a close.
    if yarl.URL(public_url, encoded=True).scheme != "https":
        return ""
    return " (over TLS, a server that requires a client certificate does this when it gets none)"


CALL_ERRORS = (TimeoutError, aiohttp.ClientError, AddressRefused)
"""The exceptions `exception_failure` turns into Failures."""
