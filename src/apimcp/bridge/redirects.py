"""The redirects the bridge follows: 307 and 308 within the endpoint's origin, the request sent again unchanged.

Every request carries what the user gave the bridge (`--api-key` as Authorization, every `--header`). A redirect
to another origin would hand those to a server the user never named (aiohttp follows it, dropping Authorization
but keeping every other header), so it is not followed: the request fails, saying where it was sent. 301, 302
and 303 make a POST a GET, which answers no JSON-RPC message: the client sees their status instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import aiohttp
from yarl import URL

MAX_REDIRECTS = 5
_FOLLOWED = (307, 308)


class RedirectRefused(Exception):
    """A redirect the bridge does not follow; the message says where it led and why."""


@asynccontextmanager
async def exchange(
    http: aiohttp.ClientSession, method: str, url: str, headers: Mapping[str, str], data: bytes | None = None
) -> AsyncIterator[aiohttp.ClientResponse]:
    """The response to `method url`, after the redirects of the endpoint's own origin; RedirectRefused for
    another origin's, or past MAX_REDIRECTS."""
    origin = URL(url).origin()
    target = URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await http.request(method, target, headers=headers, data=data, allow_redirects=False)
        location = response.headers.get("Location") if response.status in _FOLLOWED else None
        if location is None:
            try:
                yield response
            finally:
                response.release()
            return
        response.release()
        try:
            target = response.url.join(URL(location))
            elsewhere = target.origin() != origin
        except ValueError:  # not a URL, or one without a host
            raise RedirectRefused(f"{url} redirected the request to an unreadable Location") from None
        if elsewhere:
            raise RedirectRefused(
                f"{url} redirected the request to {target.origin()}, another origin: not followed, so that the "
                "bridge's credentials (--api-key, --header) are not sent there; give the bridge the URL to use"
            )
    raise RedirectRefused(f"{url} redirected the request more than {MAX_REDIRECTS} times")
