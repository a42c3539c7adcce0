"""Backend calls through the lean HTTP/1.1 client (`apimcp.http1`): the one made beside each client session
(`rest.new_session`), under the session's resolver and limit, for plain-HTTP exchanges it makes as aiohttp would.

aiohttp's client cost about three times the CPU of the lean one per request (bench/README.md, the fast path).
REST and GraphQL backends ask `lane_for` first; what it does not take (TLS, a session someone traces, what a
backend sends only through aiohttp) goes through aiohttp as before, and so do a redirect's later hops.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping

import aiohttp
import yarl

from apimcp.backends.base import Failure
from apimcp.backends.http_common import LANE_ERRORS, lane_failure, too_large
from apimcp.backends.redirects import Redirect, answer_redirect
from apimcp.http1.answer import Answer
from apimcp.http1.client import Http1Client
from apimcp.http1.errors import AnswerTooLarge

_LANES: weakref.WeakKeyDictionary[aiohttp.ClientSession, Http1Client] = weakref.WeakKeyDictionary()


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
    try:
        async with asyncio.timeout(timeout_seconds):
            answer = await lane.request(method, url, headers, body, max_bytes=max_bytes)
    except AnswerTooLarge:
        return too_large(max_bytes)
    except LANE_ERRORS as exc:
        return lane_failure(exc, public_url, timeout_seconds)
    redirect = answer_redirect(answer.status, answer.reason, answer.headers)
    return redirect if redirect is not None else answer
