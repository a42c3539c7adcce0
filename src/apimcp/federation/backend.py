"""Calling an upstream MCP server's tools: `tools/call` in the era the upstream speaks.

Credentials are those of any backend (`backends.access`: the plan's own, OAuth client credentials, a user's):
they go in the upstream request's headers, and pick the upstream session the call uses (`sessions.py`). The
client's own token is never among them: only what a plan configures reaches the upstream. The answer, a JSON
body or an SSE stream, is bounded by the member's response size; in a stream, the upstream's progress is
passed on to the client, a `ping` answered, and what the upstream asks the client (elicitation, sampling, roots;
`input_required` from a 2026-07-28 upstream) relayed to the client in its own dialect (`client_input.py`); any
other request of the upstream's is refused with an error it can read, so that it never waits for nothing. Values of
the credentials an upstream echoes are masked before anything is read. A session the upstream forgot (404) is
opened again once. A call the client cancels is cancelled upstream: a stateless upstream sees its stream
closed, a session-era one receives `notifications/cancelled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import aiohttp
import orjson
import yarl

from apimcp.backends.access import Access, BackendAccess, GivenCredentials
from apimcp.backends.base import (
    Backend,
    BackendResult,
    CallClient,
    CallExtras,
    Failure,
    McpResult,
    Progress,
    ToolAnswer,
)
from apimcp.backends.http_common import CALL_ERRORS, exception_failure, read_limited, status_failure, too_large
from apimcp.backends.oauth_client import CredentialError, TokenClient
from apimcp.backends.targets import url_address_problem
from apimcp.backends.tls import TlsSettings, client_context
from apimcp.catalog.model import McpBinding, Operation, Service
from apimcp.federation import client_input
from apimcp.federation import era as eras
from apimcp.federation.answer_deadline import AnswerDeadline
from apimcp.federation.health import UpstreamHealth
from apimcp.federation.message_channel import ChannelClosed, MessageChannel, NotDelivered
from apimcp.federation.results import BadResult, call_result
from apimcp.federation.sessions import UpstreamRefused, UpstreamSessions
from apimcp.federation.stdio_channel import StdioCommand
from apimcp.mcp_client.answers import UpstreamError, response_to, result_of
from apimcp.mcp_client.headers import param_headers
from apimcp.mcp_client.sse import EventTooLarge, messages
from apimcp.protocol.context import InputRequired
from apimcp.protocol.errors import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SESSION_URL_ELICITATION_REQUIRED,
    MissingClientCapability,
    UrlElicitationRequired,
)
from apimcp.protocol.models import LOG_LEVELS
from apimcp.protocol.tool_headers import HeaderParam, header_params
from apimcp.safety.masking import SecretMask

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
NOT_RELAYED = -32601
R = TypeVar("R")
RESOURCE_NOT_FOUND = -32002


class McpBackend(Backend):
    """Calls the tools of one upstream MCP server (Streamable HTTP, either era)."""

    def __init__(
        self,
        service: Service,
        session: aiohttp.ClientSession,
        *,
        endpoint: str | None = None,
        credentials: GivenCredentials = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        tls: TlsSettings | None = None,
        oauth_session: TokenClient | None = None,
        command: StdioCommand | None = None,
    ) -> None:
        """`command`: the server is a stdio one, started so (from an operator's configuration file only)."""
        if endpoint is None:
            if not service.servers:
                raise ValueError(f"service {service.name!r} has no URL: an MCP server's URL is needed")
            endpoint = service.servers[0].resolve()
        self._endpoint = endpoint
        self._url = yarl.URL(endpoint)
        self._url_text = str(self._url)
        self._refused = url_address_problem(endpoint) if command is None else None
        self._session = session
        self._access = BackendAccess(credentials, oauth_session or session)
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._streamed = aiohttp.ClientTimeout(total=None, sock_connect=timeout_seconds)
        """A call's POST: its answer's time is kept by `AnswerDeadline`, which stops while the client is asked."""
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_response_bytes
        self._ssl: ssl.SSLContext | bool = client_context(tls) if tls is not None else True
        self.upstream = UpstreamSessions(
            session,
            endpoint,
            timeout=self._timeout,
            tls=self._ssl,
            command=command,
            max_message_bytes=max_response_bytes,
        )
        self._ids = itertools.count(100)
        self.health = UpstreamHealth()
        """Whether the server answers (`health.py`), as the gateway's /healthz counts it."""
        self.service_id: str | None = None
        """The catalog service this backend calls the server of (set by whoever builds it from a snapshot)."""
        self._telling: set[asyncio.Task[None]] = set()
        fixed = self._access.fixed
        self._fixed_key = _credential_key(fixed) if fixed is not None else ""
        self._header_params: dict[str, tuple[HeaderParam, ...]] = {}

    def _mirrored(self, operation: Operation, arguments: Mapping[str, Any]) -> dict[str, str]:
        """The `Mcp-Param-*` headers of a call (the tool's `x-mcp-header` arguments, found once per tool)."""
        found = self._header_params.get(operation.tool_name)
        if found is None:
            found = self._header_params[operation.tool_name] = header_params(operation.input_schema)
        return param_headers(found, arguments) if found else {}

    @property
    def endpoint(self) -> str:
        """The server's URL (as configured: never shown to clients)."""
        return self._endpoint

    async def close(self) -> None:
        await self.upstream.close()

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        binding = operation.binding
        if not isinstance(binding, McpBinding):
            return Failure(f"{operation.tool_name} is not a tool of an MCP server", local=True)
        if self._refused is not None:
            return Failure(f"The MCP server is refused: {self._refused}", unsent=True)
        try:
            access = self._access.fixed or await self._access.current()
        except CredentialError as exc:
            return Failure(f"Could not obtain the MCP server's credentials: {exc}", local=True)
        # the upstream session is the credential's: headers passed on (trace context...) do not choose it
        shared = extras is None or extras.credentials is None  # the plan's own credential, not one user's
        if extras is not None and extras.credentials is not None:
            key = _credential_key(self._access.with_extras(access, CallExtras(credentials=extras.credentials)))
        elif access is self._access.fixed:
            key = self._fixed_key  # the plan's own, unchanged from call to call: its digest made once
        else:
            key = _credential_key(access)
        own_headers = access.placement.headers_with_cookies()
        own = _caller_headers(own_headers)
        if extras:
            access = self._access.with_extras(access, extras)
        if access.problem is not None:
            return Failure(f"The MCP server's credentials cannot be sent: {access.problem}", local=True)
        url = self._url.extend_query(access.placement.query) if access.placement.query else self._url
        url_text = str(url) if url is not self._url else self._url_text
        headers = access.placement.headers_with_cookies()
        passed = _caller_headers(headers)
        if passed != own:  # the client's own headers, passed on by the header policy: its session, never shared
            key = hashlib.sha256(orjson.dumps([key, sorted(passed.items())])).hexdigest()
            shared = False
        method = binding.method
        params: dict[str, Any] = (
            {"uri": binding.name}
            if method.startswith("resources/")
            else {"name": binding.name, "arguments": dict(arguments)}
        )
        client = extras.client if extras is not None else None
        ask = client.ask if client is not None else None
        capabilities = client.capabilities if client is not None else None
        asked = itertools.count(1)  # the rank of each request a session-era upstream sends during this call
        sent = params
        try:
            forgotten = rounds = 0
            while True:
                era = await self.upstream.era(key, headers, access.mask, own_headers=own_headers if shared else None,
                                              url=url_text)  # fmt: skip
                if method == "resources/subscribe" and era.stateless:  # 2026-07-28 tells it on listen streams
                    if await self.upstream.subscribe(binding.name):
                        return McpResult({})
                    return Failure(
                        "its updates are not followed: the server takes no subscriptions, the plan calls it with "
                        "each user's credential or passes on the client's own headers, or the gateway follows 100 of "
                        "its resources already"
                    )
                request_id = next(self._ids)
                # unguessable: a server that lets one caller choose what progress to send learns no other's token
                token = f"apimcp-{request_id}-{os.urandom(12).hex()}" if progress is not None else ""
                body = {**sent, "_meta": {"progressToken": token}} if progress is not None else sent
                mirrored = era.stateless and method == "tools/call"
                extra = {**headers, **self._mirrored(operation, arguments)} if mirrored else headers
                exchange = eras.call(era, request_id, method, body, extra, capabilities)
                # the clock that stops while the client is asked, where a server may ask it on the call's stream
                pausable = client is not None and not era.stateless and era.channel is None
                deadline = AnswerDeadline(self._timeout_seconds) if pausable else None
                call = _Call(request_id, token, access.mask, era, url, headers, client, asked, deadline)
                answer: Mapping[str, Any] | Failure | None
                try:
                    with self.upstream.routes.route(token, progress):  # older servers send it on the GET stream
                        if era.channel is not None:  # 2024-11-05 HTTP+SSE: asked on the session's stream
                            answer = await self._over_channel(era.channel, method, body, retry_closed=not forgotten)
                        else:
                            answer = await self._post(exchange, call, retry_forgotten=not forgotten)
                    if answer is None:  # the upstream forgot the session: opened again, once
                        self.upstream.forget(key, era)
                        forgotten += 1
                        continue
                except (asyncio.CancelledError, InputRequired):
                    if not era.stateless and era.channel is None:  # a stateless upstream stops when the stream
                        # closes; a Streamable HTTP session's is told (an HTTP+SSE one by its channel)
                        self._tell_cancelled(era, request_id, url, headers)
                    raise
                if isinstance(answer, Failure) and (answer.status or 0) >= 500:
                    self.health.failed()
                else:
                    self.health.answered()
                if isinstance(answer, Failure) or answer.get("resultType") != "input_required":
                    return _result_of(method, answer)
                rounds += 1
                if ask is None or rounds > client_input.MAX_ROUNDS:
                    return Failure("The MCP server keeps asking the user for input: the call was given up")
                state = answer.get("requestState")
                sent = {**params, "inputResponses": await client_input.responses(ask, answer)}
                if isinstance(state, str):
                    sent["requestState"] = state
        except UpstreamRefused as exc:
            if exc.status >= 500:
                self.health.failed()
            return Failure(f"The MCP server refused the gateway: {exc.message}", exc.status)
        except ChannelClosed as exc:  # it ended with the call on it, or could not be opened again
            self.health.failed()
            return Failure(f"The MCP server is unavailable: {access.mask.mask_text(exc.message)}")
        except UpstreamError as exc:
            status = 404 if exc.code == RESOURCE_NOT_FOUND else None  # read by resource reads as "not found"
            return Failure(f"The MCP server answered an error: {access.mask.mask_text(exc.message)}", status)
        except EventTooLarge:
            return too_large(self._max_bytes)
        except CALL_ERRORS as exc:
            self.health.failed()
            return exception_failure(exc, self._endpoint, self._timeout_seconds)

    def _tell_cancelled(self, era: eras.Era, request_id: int, url: yarl.URL, headers: Mapping[str, str]) -> None:
        """Tell a session-era upstream that the gateway gave up on `request_id` (its client cancelled), in the
        background: the cancelled call does not wait for it."""
        params = {"requestId": request_id, "reason": "the client cancelled the call"}
        message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}

        async def tell() -> None:
            with contextlib.suppress(*CALL_ERRORS):
                async with self._session.post(
                    url,
                    data=orjson.dumps(message),
                    headers=era.headers(message, headers),
                    timeout=self._timeout,
                    ssl=self._ssl,
                    allow_redirects=False,
                ):
                    pass

        task = asyncio.get_running_loop().create_task(tell())
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def _over_channel(
        self, channel: MessageChannel, method: str, params: Mapping[str, Any], *, retry_closed: bool
    ) -> Mapping[str, Any] | None:
        """The result over a channel (an HTTP+SSE stream, a stdio server's pipes); None when it had ended before
        the request was sent (another may be opened). One that ends once the server has the request fails the call:
        sent again, a tool that changes something would run twice."""
        try:
            return await channel.request(method, params, self._timeout_seconds)
        except NotDelivered:
            if retry_closed:
                return None
            raise

    async def _post(
        self, exchange: eras.Exchange, call: _Call, *, retry_forgotten: bool
    ) -> Mapping[str, Any] | Failure | None:
        """The answer to one request; None when the upstream no longer knows the session (and may be asked again
        in another)."""
        deadline = call.deadline
        if deadline is None:
            async with self._sent(exchange, call, self._timeout) as response:
                return await self._read(response, call, retry_forgotten)
        async with deadline.running(), self._sent(exchange, call, self._streamed) as response:
            return await self._read(response, call, retry_forgotten)

    def _sent(
        self, exchange: eras.Exchange, call: _Call, timeout: aiohttp.ClientTimeout
    ) -> aiohttp.client._RequestContextManager:
        return self._session.post(
            call.url, data=exchange.body, headers=exchange.headers, timeout=timeout, ssl=self._ssl,
            allow_redirects=False,
        )  # fmt: skip

    async def _read(
        self, response: aiohttp.ClientResponse, call: _Call, retry_forgotten: bool
    ) -> Mapping[str, Any] | Failure | None:
        if response.status == 404 and call.era.negotiated.session_id is not None and retry_forgotten:
            return None
        return await self._answer(response, call)

    async def _answer(self, response: aiohttp.ClientResponse, call: _Call) -> Mapping[str, Any] | Failure:
        """The result object of the call's request, or the Failure the answer makes."""
        mask = call.mask
        if response.status != 200:
            body = await read_limited(response, self._max_bytes) or b""
            body = mask.mask_bytes(body) if mask else body
            if response.content_type == "application/json":
                with contextlib.suppress(UpstreamError):  # an error about the client is raised; others fail below
                    _client_errors_raised(lambda: result_of(body, "application/json", call.request_id))
            return status_failure(response.status, response.reason, body)
        if response.content_type == "text/event-stream":
            result = None
            stream = messages(
                response,
                self._max_bytes,
                max_total_bytes=self._max_bytes,
                transform=mask.mask_bytes if mask else None,
            )
            async for message in stream:
                result = _response_to(message, call.request_id)
                if result is not None:
                    break
                await self._heard(message, call)
            if result is None:
                return Failure("The MCP server's stream ended without the result")
        else:
            read = await read_limited(response, self._max_bytes)
            if read is None:
                return too_large(self._max_bytes)
            read = mask.mask_bytes(read) if mask else read
            result = _client_errors_raised(lambda: result_of(read, response.content_type, call.request_id))
        return result

    async def _heard(self, message: object, call: _Call) -> None:
        """A message of the upstream's before the call's result: progress passed on, a request answered (what it
        asks the client relayed to the client)."""
        if not isinstance(message, Mapping):
            return
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        if method == "notifications/progress":
            if call.token and params.get("progressToken") == call.token:  # a call's stream tells of that call only
                await self.upstream.routes.heard(params)
            return
        if method == "notifications/message" and call.client is not None:
            level, logger = params.get("level"), params.get("logger")
            if level in LOG_LEVELS:
                await call.client.log(level, params.get("data"), logger if isinstance(logger, str) else None)
            return
        if "id" not in message or not isinstance(method, str):
            return
        asked = client_input.method_of(method)
        if method == "ping":
            reply: dict[str, Any] = {"result": {}}
        elif asked is not None and call.client is not None:
            rank = next(call.asked)
            if rank > client_input.MAX_REQUESTS:  # a server asking without end is not relayed without end
                text = f"apimcp relays at most {client_input.MAX_REQUESTS} requests of one call to its client"
                reply = {"error": {"code": NOT_RELAYED, "message": text}}
            else:
                with call.deadline.paused() if call.deadline is not None else _NO_DEADLINE:  # a person may take longer
                    reply = await client_input.answer(call.client.ask, f"{method}.{rank}", asked, params)
        else:
            reply = {"error": {"code": NOT_RELAYED, "message": f"apimcp does not relay {method[:60]} to this client"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], **reply}
        async with self._session.post(
            call.url,
            data=orjson.dumps(reply),
            headers=call.era.headers(reply, call.headers),
            timeout=self._timeout,
            ssl=self._ssl,
            allow_redirects=False,
        ):
            pass


@dataclass(frozen=True, slots=True)
class _Call:
    """One request of a call to the upstream, as its answer is read."""

    request_id: int
    token: str
    """The progress token the call was sent with (empty: none)."""
    mask: SecretMask
    era: eras.Era
    url: yarl.URL
    headers: Mapping[str, str]
    client: CallClient | None
    asked: Iterator[int]
    deadline: AnswerDeadline | None
    """The clock of a call whose client a session-era server may ask on its stream; else aiohttp's timeout."""


_NO_DEADLINE: Final = contextlib.nullcontext()


def _response_to(message: object, request_id: int) -> Mapping[str, Any] | None:
    return _client_errors_raised(lambda: response_to(message, request_id))


def _client_errors_raised(read: Callable[[], R]) -> R:
    """`read()`, whose error about the client (a capability it did not declare, a URL it must visit first) is
    raised as the engine's own: the client learns what to do, as if the gateway had said it."""
    try:
        return read()
    except UpstreamError as exc:
        _raise_for_client(exc)
        raise


def _raise_for_client(exc: UpstreamError) -> None:
    data = exc.data if isinstance(exc.data, Mapping) else {}
    if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY and isinstance(data.get("requiredCapabilities"), Mapping):
        raise MissingClientCapability(data["requiredCapabilities"], exc.message[:500])
    elicitations = data.get("elicitations")
    if exc.code == SESSION_URL_ELICITATION_REQUIRED and isinstance(elicitations, list):
        urls = [
            {key: e[key] for key in ("message", "url", "elicitationId") if isinstance(e.get(key), str)}
            for e in elicitations[:16]
            if isinstance(e, Mapping) and isinstance(e.get("url"), str)
        ]
        if urls:
            raise UrlElicitationRequired(urls, exc.message[:500])


def _result_of(method: str, answer: Mapping[str, Any] | Failure) -> BackendResult:
    if isinstance(answer, Failure):
        return answer
    if method != "tools/call":
        return McpResult(answer)
    try:
        return ToolAnswer(call_result(answer))
    except BadResult as exc:
        return Failure(f"The MCP server's answer is not a tool result: {exc}")


_NOT_WHO: Final = frozenset((
    "traceparent", "tracestate", "baggage", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
    "x-request-id", "x-correlation-id", "accept-language", "cache-control", "pragma", "priority", "referer", "dnt",
    "x-requested-with",
))  # fmt: skip
"""Headers a call may carry that say nothing of who calls (tracing, proxies, what HTTP clients add by themselves:
Node's fetch sends `accept-language` and `sec-fetch-mode`). Every other header passed on may (an API key the header
policy renames, say), so a call with others than the plan's own has a session of its own."""


def _caller_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers of `headers` that may say who calls: all but those that never do."""
    return {
        name.lower(): value
        for name, value in headers.items()
        if name.lower() not in _NOT_WHO and not name.lower().startswith("sec-")
    }


def _credential_key(access: Access) -> str:
    """Which credential a call is made with, as a digest (the upstream session it uses is that credential's)."""
    placement = access.placement
    items = sorted((k.lower(), v) for k, v in placement.headers_with_cookies().items()) + sorted(placement.query)
    return hashlib.sha256(orjson.dumps(items)).hexdigest()
