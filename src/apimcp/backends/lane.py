"""The first hop of a REST or GraphQL backend call: through the lean HTTP/1.1 client (`apimcp.http1`) made beside
each client session (`rest.new_session`), under the session's resolver and limit, when it can take the exchange,
else through aiohttp; either way the whole answer, the redirect it asks for, or the Failure it made.

aiohttp's client cost about three times the CPU of the lean one per request (bench/README.md, the fast path).
What the lean client does not take (TLS, a session someone traces, what a backend sends only through aiohttp)
goes through aiohttp as before, and so do a redirect's later hops (`redirects.follow`).
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import Mapping

import aiohttp
import yarl

from apimcp.backends.base import Failure
from apimcp.backends.http_common import LANE_ERRORS, lane_failure, read_limited, too_large, unread_coding
from apimcp.backends.redirects import Redirect, answer_redirect, redirect_of
from apimcp.http1.answer import Answer
from apimcp.http1.client import Http1Client
from apimcp.http1.errors import AnswerTooLarge
from apimcp.protocol.deadlines import SharedDeadline

_LANES: weakref.WeakKeyDictionary[aiohttp.ClientSession, Http1Client] = weakref.WeakKeyDictionary()
DEADLINE_GRAIN = 0.05
"""Seconds: a call times out between its backend's timeout and that much later (`SharedDeadline`)."""
_DEADLINES: dict[float, SharedDeadline] = {}
"""One per timeout a backend has (a few per gateway), shared by all its calls: a timer per call cost about 4 µs."""
_MAX_DEADLINES = 256


def _deadline(seconds: float) -> SharedDeadline:
    found = _DEADLINES.get(seconds)
    if found is None:
        if len(_DEADLINES) >= _MAX_DEADLINES:  # bounded whatever the configurations applied over time say
            _DEADLINES.clear()
        found = _DEADLINES[seconds] = SharedDeadline(seconds, DEADLINE_GRAIN)
    return found


def attach(session: aiohttp.ClientSession, lane: Http1Client) -> None:
    _LANES[session] = lane


def detach(session: aiohttp.ClientSession) -> Http1Client | None:
    """The session's lean client, no longer attached (its owner closes it)."""
    return _LANES.pop(session, None)


def fast_lane(session: aiohttp.ClientSession) -> Http1Client | None:
    return _LANES.get(session)


def lane_for(session: aiohttp.ClientSession, url: yarl.URL) -> Http1Client | None:
    """The lean client for a request to `url`: plain HTTP, and a session no one traces (aiohttp's trace configs
    see every call)."""
    if url.scheme != "http" or session.trace_configs:
        return None
    return _LANES.get(session)


async def exchange(
    lane: Http1Client,
    method: str,
    url: yarl.URL,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    public_url: str,
    timeout_seconds: float,
    max_bytes: int,
) -> Answer | Redirect | Failure:
    """The answer, the redirect it asks for (its next hops go through aiohttp), or the Failure the exchange
    made, in the words aiohttp's would have been told (`http_common`)."""
    watch = _deadline(timeout_seconds).watch()
    try:
        answer = await lane.request(method, url, headers, body, max_bytes=max_bytes)
    except AnswerTooLarge:
        return too_large(max_bytes)
    except LANE_ERRORS as exc:
        return lane_failure(exc, public_url, timeout_seconds)
    except asyncio.CancelledError:
        if not watch.timed_out():
            raise  # the caller's cancellation: it goes through
        return lane_failure(TimeoutError(), public_url, timeout_seconds)
    finally:
        watch.done()
    redirect = answer_redirect(answer.status, answer.reason, answer.headers)
    return redirect if redirect is not None else answer


async def first_hop(
    session: aiohttp.ClientSession,
    method: str,
    url: yarl.URL,
    headers: Mapping[str, str],
    body: bytes | aiohttp.FormData | None,
    *,
    public_url: str,
    client_timeout: aiohttp.ClientTimeout,
    timeout_seconds: float,
    tls: ssl.SSLContext | bool,
    max_bytes: int,
) -> Answer | Redirect | Failure:
    """One request to the backend, by the lean client when it can send it as aiohttp would (not `HEAD`, whose
    answer has no body, nor a multipart form); aiohttp's own errors are raised (`http_common.CALL_ERRORS`)."""
    if method != "HEAD" and not isinstance(body, aiohttp.FormData):
        fast = lane_for(session, url)
        if fast is not None:
            return await exchange(
                fast, method, url, headers, body, public_url=public_url, timeout_seconds=timeout_seconds,
                max_bytes=max_bytes,
            )  # fmt: skip
    async with session.request(
        method, url, headers=headers, data=body, timeout=client_timeout, ssl=tls,
        allow_redirects=False,  # redirects.follow decides which are followed
    ) as response:  # fmt: skip
        redirect = redirect_of(response)
        if redirect is not None:
            return redirect
        unread = unread_coding(response)
        if unread is not None:
            return unread
        read = await read_limited(response, max_bytes)
        if read is None:
            return too_large(max_bytes)
        return Answer(response.status, response.reason or "", response.headers, read)
