"""Reading an upstream MCP server when it is imported: its era, then every page of its tools, and of its prompts,
resources and resource templates when it says it offers them.

It is a fetch made on someone's behalf (`safety.fetch.Fetcher`): the fetch policy decides which addresses
the server may have, every answer is bounded in size, every request by the fetcher's timeout and the whole
reading by `READING_SECONDS`, and there are at most `MAX_PAGES` pages a listing. Credentials (`headers`) go with every
request and never into the service. A session opened to read is ended (DELETE) when done, from 2025-06-18 on
(`Era.ends_sessions`). A server that takes no POST at its URL is read over the 2024-11-05 HTTP+SSE transport.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import aiohttp
import yarl

from apimcp.catalog.model import Service
from apimcp.federation import era as eras
from apimcp.federation.definitions import MAX_TOOLS, upstream_service
from apimcp.federation.listener import ProgressRoutes
from apimcp.federation.message_channel import MessageChannel
from apimcp.federation.sse_channel import SseChannel
from apimcp.federation.stdio_channel import StdioChannel, StdioCommand
from apimcp.importers.errors import SpecError
from apimcp.mcp_client.answers import UpstreamError, result_of
from apimcp.safety.addresses import AddressRefused
from apimcp.safety.fetch import Fetcher, FetchError, FetchResponse, join_url, url_origin
from apimcp.safety.masking import SecretMask
from apimcp.safety.resolver import PolicyResolver, check_literal_host
from apimcp.safety.shown_urls import shown_location

MAX_PAGES = 100
MAX_REDIRECTS = 3
READING_SECONDS = 120.0
"""The whole reading of a server (its opening and every page of every listing) ends within this, or within the
timeout of one request if that is longer: each request is bounded too, but up to 400 of them at 30 s each would
hold an import for hours."""
T = TypeVar("T")


def import_upstream(
    url: str,
    *,
    name: str | None = None,
    version: str | None = None,
    headers: Mapping[str, str] | None = None,
    tool_prefix: str = "",
    fetcher: Fetcher | None = None,
) -> Service:
    """The service of the MCP server at `url` (Streamable HTTP in either era, or HTTP+SSE): every tool, prompt,
    resource and template it lists. Its name and version default to the server's own (`serverInfo`)."""
    fetcher = fetcher or Fetcher()
    shown = shown_location(url)
    seconds = reading_seconds(fetcher.limits.timeout_seconds)
    reader = _Reader(url, fetcher, dict(headers or {}), time.monotonic() + seconds)
    try:
        try:
            era = reader.open()
        except _SseTransport:  # the 2024-11-05 HTTP+SSE transport: read on an event loop of its own
            reading = _read_channel(reader.url, fetcher, headers, reader.left())
            era, (tools, prompts, resources, templates) = _in_own_loop(reading)
        else:
            try:
                tools, prompts, resources, templates = _listings(era, reader.every_item)
            finally:
                reader.close(era)
    except UpstreamError as exc:
        raise SpecError(f"the MCP server at {shown}: {exc.message}", source=shown) from None
    except (FetchError, aiohttp.ClientError, TimeoutError, AddressRefused) as exc:
        if reader.left() <= 0:
            raise SpecError(
                f"the MCP server at {shown} was not read whole within {seconds:g} s", source=shown
            ) from None
        raise SpecError(f"could not read the MCP server at {shown}: {exc}", source=shown) from None
    return _service_of(era, (tools, prompts, resources, templates), reader.url, shown, name, version, tool_prefix)


def import_stdio(
    command: StdioCommand,
    *,
    name: str | None = None,
    version: str | None = None,
    tool_prefix: str = "",
    timeout_seconds: float = 30.0,
    max_message_bytes: int = 10 * 1024 * 1024,
) -> Service:
    """The service of the stdio MCP server `command` starts (stopped once read): every tool, prompt, resource
    and template it lists. Its URL is `stdio:` and the program's name (it names the server; nothing is fetched
    from it)."""
    program = command.argv[0].rsplit("/", 1)[-1]
    url = f"stdio:{program}"
    masked = SecretMask(command.secrets)
    channel = StdioChannel(
        command, ProgressRoutes(), max_line_bytes=max_message_bytes, transform=masked.mask_bytes if masked else None
    )
    seconds = reading_seconds(timeout_seconds)
    started = time.monotonic()
    try:
        era, listings = _in_own_loop(_read_over(channel, timeout_seconds, seconds))
    except UpstreamError as exc:
        said = f"; it wrote: {' | '.join(channel.last_words)}" if channel.last_words else ""
        raise SpecError(f"{exc.message}{said}", source=url) from None
    except TimeoutError:
        if time.monotonic() - started >= seconds:
            raise SpecError(f"the stdio MCP server {program} was not read whole within {seconds:g} s",
                            source=url) from None  # fmt: skip
        raise SpecError(
            f"the stdio MCP server {program} did not answer within {timeout_seconds:g} s", source=url
        ) from None
    return _service_of(era, listings, url, url, name, version, tool_prefix)


def _service_of(
    era: eras.Era,
    listings: Listings,
    url: str,
    shown: str,
    name: str | None,
    version: str | None,
    tool_prefix: str,
) -> Service:
    """The service of a server that answered `listings`; its name and version default to its `serverInfo`."""
    tools, prompts, resources, templates = listings
    info = era.server_info
    server_name = info.get("name") if isinstance(info.get("name"), str) else None
    server_version = info.get("version") if isinstance(info.get("version"), str) else None
    chosen_name = name or server_name
    if not chosen_name:
        raise SpecError("the MCP server gives no name: give the service's name", source=shown)
    description = info.get("description") or info.get("title")
    return upstream_service(
        chosen_name[:100],
        (version or server_version or "1")[:50],
        url,
        tools,
        description=description if isinstance(description, str) else None,
        tool_prefix=tool_prefix,
        offerings=(prompts, resources, templates),
    )


Listings = tuple[list[object], list[object], list[object], list[object]]


def _listings(era: eras.Era, every_item: Callable[[eras.Era, str, str], list[object]]) -> Listings:
    """Every page of the tools, and of the prompts, resources and templates when the server offers them."""
    offers_resources = era.offers("resources")
    return (
        every_item(era, "tools/list", "tools"),
        every_item(era, "prompts/list", "prompts") if era.offers("prompts") else [],
        every_item(era, "resources/list", "resources") if offers_resources else [],
        every_item(era, "resources/templates/list", "resourceTemplates") if offers_resources else [],
    )


class _SseTransport(Exception):
    """The server takes no POST at its URL: it may speak the 2024-11-05 HTTP+SSE transport."""


def _in_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """`work` run to its end on an event loop of its own thread (an import may be asked from a running loop)."""
    with ThreadPoolExecutor(1, thread_name_prefix="apimcp-sse-import") as pool:
        return pool.submit(asyncio.run, work).result()


def reading_seconds(request_seconds: float) -> float:
    """How long the whole reading of a server may take, when one request may take `request_seconds`."""
    return max(READING_SECONDS, request_seconds)


async def _read_channel(
    url: str, fetcher: Fetcher, headers: Mapping[str, str] | None, seconds: float
) -> tuple[eras.Era, Listings]:
    """Read an HTTP+SSE server through the fetch policy: its addresses checked, each event within the fetch size
    limit, every request within the fetch timeout, all of it within `seconds`."""
    check_literal_host(fetcher.policy, yarl.URL(url).host)
    connector = aiohttp.TCPConnector(resolver=PolicyResolver(fetcher.policy, fetcher.resolve), limit=4)
    within = fetcher.limits.timeout_seconds
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as http:
        channel = SseChannel(
            http,
            url,
            dict(headers or {}),
            ProgressRoutes(),
            tls=fetcher.tls or True,
            max_event_bytes=fetcher.limits.max_bytes,
        )
        return await _read_over(channel, within, seconds)


async def _read_over(channel: MessageChannel, within: float, seconds: float) -> tuple[eras.Era, Listings]:
    """Open `channel`, initialize, and read every listing the server offers, each request within `within` and
    all of them within `seconds`; the channel is closed after."""
    try:
        async with asyncio.timeout(seconds):
            return await _read_all(channel, within)
    finally:
        await channel.close()


async def _read_all(channel: MessageChannel, within: float) -> tuple[eras.Era, Listings]:
    await channel.open()
    era = eras.opened_era(await channel.request("initialize", eras.initialize_params(), within), {}, channel)
    await channel.notify("notifications/initialized")
    found: dict[tuple[str, str], list[object]] = {}
    for method, key in (
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ):
        if method == "tools/list" or era.offers(method.split("/")[0]):
            found[method, key] = await _channel_pages(channel, method, key, within)
    return era, _listings(era, lambda _, method, key: found.get((method, key), []))


async def _channel_pages(channel: MessageChannel, method: str, key: str, within: float) -> list[object]:
    items: list[object] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        result = await channel.request(method, {"cursor": cursor} if cursor else {}, within)
        cursor = _add_page(items, result, method, key, cursor)
        if cursor is None:
            return items
    raise UpstreamError(f"{method} has more than {MAX_PAGES} pages")


def _add_page(items: list[object], result: Mapping[str, Any], method: str, key: str, cursor: str | None) -> str | None:
    """Add a page's `key` to `items` (at most `MAX_TOOLS` in all); the cursor of the next page, None after the
    last (a cursor the server gives again ends the listing too)."""
    page = result.get(key)
    if not isinstance(page, list):
        raise UpstreamError(f"{method} answered no list of {key}")
    items.extend(page)
    if len(items) > MAX_TOOLS:
        raise UpstreamError(f"the server lists more than {MAX_TOOLS} {key}")
    following = result.get("nextCursor")
    return following if isinstance(following, str) and following and following != cursor else None


class _Reader:
    def __init__(self, url: str, fetcher: Fetcher, credentials: dict[str, str], deadline: float) -> None:
        self.url = url
        """The server's URL, once any redirect within its origin is followed."""
        self._fetcher = fetcher
        self._credentials = credentials
        self._deadline = deadline
        """When the whole reading ends (`time.monotonic()`): every request ends by it too."""
        self._next_id = 10

    def left(self) -> float:
        """Seconds left of the whole reading."""
        return self._deadline - time.monotonic()

    def open(self) -> eras.Era:
        probe = eras.discover({})
        answer = self._post(probe.headers, probe.body)
        stateless = eras.stateless_era(answer.status, answer.headers.get("content-type", ""), answer.body)
        if stateless is not None:
            return stateless
        opening = eras.initialize({})
        answer = self._post(opening.headers, opening.body)
        if answer.status in eras.SSE_STATUSES:
            raise _SseTransport
        era = eras.session_era(answer.status, answer.headers, answer.headers.get("content-type", ""), answer.body)
        body, headers = eras.initialized(era, {})
        self._post(headers, body)
        return era

    def _post(self, headers: Mapping[str, str], body: bytes) -> FetchResponse:
        """One POST to the server; a redirect within the server's origin (`/mcp` to `/mcp/`) is followed, and the
        server's URL is then the one redirected to. Another origin is refused: the plan's credentials would go
        there on every call."""
        for _ in range(MAX_REDIRECTS + 1):
            if self.left() <= 0:
                raise TimeoutError("the reading's time ran out")
            answer = self._fetcher.request(
                "POST", self.url, headers=headers, credentials=self._credentials, body=body, follow_redirects=False,
                by=self._deadline,
            )  # fmt: skip
            location = answer.headers.get("location")
            if answer.status not in (307, 308) or not location:
                return answer
            target = join_url(self.url, location.strip())
            if url_origin(target) != url_origin(self.url):
                raise UpstreamError(
                    f"the server redirects to another origin ({shown_location(target)}): import that URL if it is meant"
                )
            self.url = target
        raise UpstreamError(f"more than {MAX_REDIRECTS} redirects")

    def every_item(self, era: eras.Era, method: str, key: str) -> list[object]:
        """Every page of a list method's `key`."""
        items: list[object] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            self._next_id += 1
            exchange = eras.call(era, self._next_id, method, {"cursor": cursor} if cursor else {}, {})
            answer = self._post(exchange.headers, exchange.body)
            if answer.status != 200:
                raise UpstreamError(f"{method} was answered HTTP {answer.status}")
            result = result_of(answer.body, answer.headers.get("content-type", ""), self._next_id)
            cursor = _add_page(items, result, method, key, cursor)
            if cursor is None:
                return items
        raise UpstreamError(f"{method} has more than {MAX_PAGES} pages")

    def close(self, era: eras.Era) -> None:
        if not era.ends_sessions:
            return
        try:
            headers = era.headers({}, {})
            self._fetcher.request(
                "DELETE", self.url, headers=headers, credentials=self._credentials, follow_redirects=False
            )
        except FetchError:
            pass  # the session expires on the server's side anyway
