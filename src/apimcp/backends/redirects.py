"""Backend redirects: followed within the backend's origin, never to another one.

A redirect to the same origin (scheme, host and port) is followed, with every
credential of the call, up to a few hops. A redirect to another origin is not
followed at all, and the tool result names the status and that origin: the
other origin is not trusted with the backend's credentials (an API-key header, a
cookie or a query key would follow it), and the gateway would be fetching an
address its network policy never checked. Not following it is also the one
answer that cannot leak anything, whatever the credentials are.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

import aiohttp
import yarl

from apimcp.backends.base import BackendResult, Failure
from apimcp.safety.fetch import REDIRECT_STATUSES, BadUrl, url_origin
from apimcp.safety.masking import SecretMask

DEFAULT_MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class Hop:
    """The next request of a followed redirect."""

    url: yarl.URL
    method: str
    keeps_body: bool


def shown_origin(url: yarl.URL) -> str:
    scheme, host = url.scheme.lower(), (url.host or "").lower()
    bracketed = f"[{host}]" if ":" in host else host
    return f"{scheme}://{bracketed}" + (f":{url.explicit_port}" if url.explicit_port is not None else "")


@dataclass(frozen=True, slots=True)
class Redirect:
    """An answer asking for another request: its status, reason and Location."""

    status: int
    reason: str | None
    location: str


def redirect_of(response: aiohttp.ClientResponse) -> Redirect | None:
    """The redirect an answer asks for; None for every other answer (the common case, decided first)."""
    return answer_redirect(response.status, response.reason, response.headers)


def answer_redirect(status: int, reason: str | None, headers: Mapping[str, str]) -> Redirect | None:
    """`redirect_of` for an answer of any client."""
    if status not in REDIRECT_STATUSES:
        return None
    location = headers.get("Location")
    return Redirect(status, reason, location) if location else None


def next_hop(redirect: Redirect, url: yarl.URL, method: str, hops: int, max_hops: int) -> Hop | Failure:
    """What to do with `redirect`, the answer to `method url` after `hops` redirects: a Hop to follow, or the
    Failure saying why it is not followed."""
    status = redirect.status
    said = f"HTTP {status} {redirect.reason or ''}".strip()
    try:
        target = url.join(yarl.URL(redirect.location))
        same_origin = url_origin(str(target)) == url_origin(str(url))
    except (ValueError, TypeError, BadUrl):
        return Failure(f"The backend answered {said} with a Location that is not a URL; it is not followed", status)
    if target.scheme not in ("http", "https") or not target.host:
        return Failure(f"The backend answered {said}, a redirect to a non-HTTP location; it is not followed", status)
    if not same_origin:
        return Failure(
            f"The backend answered {said}, a redirect to another origin ({shown_origin(target)}), which is not "
            "followed: that origin is not trusted with this backend's credentials, nor checked by the gateway's "
            "network policy. Point the plan's backend at the right address.",
            status,
        )
    if hops >= max_hops:
        return Failure(f"The backend redirected more than {max_hops} times; the last redirect was not followed", status)
    if status == 303 or (status in (301, 302) and method == "POST"):
        # What every HTTP client does: the next request is a GET without the body (RFC 9110, 15.4).
        return Hop(_plain(target), "GET" if method != "HEAD" else "HEAD", keeps_body=False)
    return Hop(_plain(target), method, keeps_body=True)


def _plain(url: yarl.URL) -> yarl.URL:
    return url.with_user(None).with_fragment(None)


Body = bytes | aiohttp.FormData | None


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A backend request that was redirected, as `follow` sends it again (made only then)."""

    method: str
    url: yarl.URL
    headers: dict[str, str]
    body_again: Callable[[], Body]
    """The body for a redirect that keeps it (a multipart form is written once: it is built again)."""
    query_credentials: Sequence[tuple[str, str]] = ()
    """Query API keys: kept on a same-origin redirect whose Location leaves them out."""


async def follow(
    session: aiohttp.ClientSession,
    request: Outgoing,
    redirect: Redirect,
    answer: Callable[[aiohttp.ClientResponse], Awaitable[BackendResult]],
    *,
    started: float,
    client_timeout: aiohttp.ClientTimeout,
    tls: ssl.SSLContext | bool,
    max_redirects: int,
    mask: SecretMask,
) -> BackendResult:
    """Follow `redirect`, the answer to `request` (sent at `started`, by `time.monotonic`), within its origin,
    and give the final response to `answer`. Backends send the first request themselves, so that the answers
    that are no redirect (nearly all) cost nothing here. Every hop shares the `client_timeout` total of the
    call; a timeout raises TimeoutError."""
    method, url, headers = request.method, request.url, request.headers
    total = client_timeout.total
    hops = 0
    while True:
        hop = next_hop(redirect, url, method, hops, max_redirects)
        if isinstance(hop, Failure):
            return Failure(mask.mask_text(hop.message), hop.status) if mask else hop
        hops += 1
        timeout = client_timeout
        if total is not None:  # the hops share the call's deadline
            left = total - (time.monotonic() - started)
            if left <= 0:
                raise TimeoutError
            timeout = aiohttp.ClientTimeout(total=left)
        url = _with_query_credentials(hop.url, request.query_credentials)
        if not hop.keeps_body:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "content-length")}
        method, body = hop.method, request.body_again() if hop.keeps_body else None
        async with session.request(
            method, url, headers=headers, data=body, timeout=timeout, ssl=tls, allow_redirects=False
        ) as response:
            followed = redirect_of(response)
            if followed is None:
                return await answer(response)
            redirect = followed


def _with_query_credentials(url: yarl.URL, query: Sequence[tuple[str, str]]) -> yarl.URL:
    present = set(url.query)
    missing = [(name, value) for name, value in query if name not in present]
    if not missing:
        return url
    added = "&".join(f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in missing)
    raw = str(url)
    return yarl.URL(raw + ("&" if url.raw_query_string else "?") + added, encoded=True)
