"""The stateless era: revision 2026-07-28.

Every request is self-contained. Before dispatch it climbs a validation ladder
in the order the specification gives, and the first failure decides the
answer:

1. `params._meta` carries protocolVersion and clientCapabilities -> else 400, -32602
2. MCP-Protocol-Version, Mcp-Method, Mcp-Name (and Mcp-Param-*) mirror the body -> else 400, -32020
3. the version is one this server speaks -> else 400, -32022 with {supported, requested}
4. the method exists in this revision and is offered -> else 404, -32601
5. capabilities the request needs were declared -> else 400, -32021

Results carry `resultType`, serverInfo in `_meta`, and caching hints on the six
cacheable methods. A handler that needs client input stops with
`InputRequired`; the answer is then an `input_required` result whose sealed
`requestState` carries the answers gathered so far into the retry.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimcp.protocol import dialects
from apimcp.protocol.caller import NO_SOURCE, RequestSource
from apimcp.protocol.context import InputRequired, Outbound, RequestContext, check_client_supports, check_input_response
from apimcp.protocol.dispatch import CACHEABLE_METHODS, INPUT_REQUIRED_METHODS, Dispatcher, internal_error
from apimcp.protocol.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_BUSY,
    UNSUPPORTED_PROTOCOL_VERSION,
    HttpRefusal,
    McpError,
    UrlElicitationRequired,
    invalid_params,
)
from apimcp.protocol.exchange import Exchange, Receive, wait_for_disconnect
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.headers import MalformedHeader, decode_header_value
from apimcp.protocol.jsonrpc import (
    InvalidMessage,
    JsonObject,
    Notification,
    Request,
    RequestId,
    classify,
    error_message,
    notification_message,
    result_message,
)
from apimcp.protocol.listeners import ChangeHub, ChangeKind, Listener
from apimcp.protocol.models import LOG_LEVELS, InputRequest, Tool, elicitation_url
from apimcp.protocol.observe import RequestObserver, RequestRecord, outcome_of, target_of
from apimcp.protocol.options import EndpointOptions
from apimcp.protocol.request_state import RoundState, request_digest
from apimcp.protocol.sessions import StoreUnavailable
from apimcp.protocol.tasks.methods import StatelessTasks
from apimcp.protocol.tasks.runner import TaskRunner, TaskSettings
from apimcp.protocol.tool_headers import HeaderParam, check_param_headers, header_params
from apimcp.protocol.versions import STATELESS_REVISIONS, Era, Revision, find_revision

MAX_LISTEN_SUBSCRIPTIONS = 256
"""Resources one subscriptions/listen stream may name (each asked of the handler, perhaps of an MCP server)."""
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

REMOVED_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)
_NO_ANSWERS: dict[str, Any] = {}  # shared and never written: a fresh dict replaces it when answers come
_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
TASK_NAME_PARAMS = {**_NAME_PARAM, "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
"""The body field each request's `Mcp-Name` header mirrors (with the tasks extension)."""

# HTTP status of each error code at this revision (anything else: 200).
_STATUS = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32021: 400, -32022: 400, -32601: 404}


@dataclass(frozen=True, slots=True)
class _Answer:
    """One request's answer: its message (None: cancelled, nothing is sent), HTTP status and headers, and the
    refusal that set the status, if one did."""

    response: JsonObject | None
    status: int = 200
    headers: tuple[tuple[bytes, bytes], ...] = ()
    refused: HttpRefusal | None = None


def has_envelope(payload: object) -> bool:
    """Whether a body carries the 2026-07-28 per-request `_meta` envelope."""
    if not isinstance(payload, dict):
        return False
    params = payload.get("params")
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


class _Refusal(Exception):
    """A ladder failure: the error and the HTTP status to answer with."""

    def __init__(self, status: int, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.data = status, code, message, data


class StatelessEra:
    """Serves 2026-07-28 traffic for one endpoint."""

    def __init__(
        self, dispatcher: Dispatcher, hub: ChangeHub, options: EndpointOptions, endpoint_id: str = "mcp"
    ) -> None:
        self._hub = hub
        self._options = options
        self._endpoint_id = endpoint_id
        self._tasks = StatelessTasks(TaskRunner(TaskSettings(store=options.tasks), endpoint_id))
        self._sealer = options.request_state
        self._supported = [r.version for r in STATELESS_REVISIONS]
        # Keyed by the Tool object, so a handler that swaps its tools never meets stale annotations.
        self._header_params: weakref.WeakKeyDictionary[Tool, tuple[HeaderParam, ...]] = weakref.WeakKeyDictionary()
        self.use(dispatcher)

    def stop_tasks(self) -> None:
        self._tasks.runner.stop()

    def use(self, dispatcher: Dispatcher) -> None:
        """Serve another handler from now on (open listen streams carry over)."""
        handler = dispatcher.handler
        server_info = {r.rank: dialects.implementation(handler.server_info, r) for r in STATELESS_REVISIONS}
        self._dispatcher, self._handler, self._server_info = dispatcher, handler, server_info
        offers_tasks = handler.features.tasks and handler.features.tools
        self._task_methods = self._tasks.methods if offers_tasks else {}
        self._name_param = TASK_NAME_PARAMS if offers_tasks else _NAME_PARAM

    async def post(
        self,
        exchange: Exchange,
        receive: Receive,
        payload: object,
        headers: Mapping[bytes, bytes],
        param_headers: Mapping[bytes, bytes],
        source: RequestSource = NO_SOURCE,
    ) -> None:
        try:
            message = classify(payload)
        except InvalidMessage as exc:
            await exchange.json(400, error_message(exc.request_id, exc.code, exc.message))
            return
        if isinstance(message, Notification):
            # notifications/cancelled is stdio-only here: closing the stream cancels.
            await exchange.empty(202)
            return
        if not isinstance(message, Request):
            await exchange.json(
                400, error_message(message.id, INVALID_REQUEST, "Clients send no JSON-RPC responses in 2026-07-28")
            )
            return
        try:
            revision, meta = self._climb_ladder(message, headers, param_headers)
        except _Refusal as refusal:
            await exchange.json(refusal.status, error_message(message.id, refusal.code, refusal.message, refusal.data))
            return
        if message.method == "subscriptions/listen":
            await self._listen(exchange, receive, message, revision, meta, source)
            return
        observer = self._handler.observer
        target = None
        if observer is not None:
            target = target_of(message.method, message.params)
            observer.request_started(message.method, target, source)
        started = time.perf_counter()
        answer = _Answer(None)
        try:
            answer = await self._respond(exchange, receive, message, revision, meta, source)
            if answer.response is not None:
                await exchange.json(answer.status, answer.response, list(answer.headers))
            else:
                await exchange.close()
        finally:  # a client gone before the answer was written is still heard of
            if observer is not None:
                self._observed(observer, message, target, revision, answer, started, source)

    def _observed(
        self,
        observer: RequestObserver,
        message: Request,
        target: str | None,
        revision: Revision,
        answer: _Answer,
        started: float,
        source: RequestSource,
    ) -> None:
        refused = answer.refused
        outcome, code = outcome_of(answer.response, refused)
        record = RequestRecord(
            method=message.method,
            target=target,
            request_id=message.id,
            session_id=None,
            revision=revision.version,
            outcome=outcome,
            error_code=code,
            duration_ms=(time.perf_counter() - started) * 1000,
            source=source,
            status=refused.status if refused is not None else None,
            reason=refused.reason if refused is not None else None,
        )
        observer.request_finished(record)

    # --- the ladder ------------------------------------------------------------------------

    def _climb_ladder(
        self, request: Request, headers: Mapping[bytes, bytes], param_headers: Mapping[bytes, bytes]
    ) -> tuple[Revision, Mapping[str, Any]]:
        params = request.params
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            raise _Refusal(400, INVALID_PARAMS, 'Missing "params._meta": 2026-07-28 requests carry it on every request')
        version = meta.get(PROTOCOL_VERSION_KEY)
        if not isinstance(version, str):
            raise _Refusal(400, INVALID_PARAMS, f'"params._meta" needs "{PROTOCOL_VERSION_KEY}" (a string)')
        if not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), dict):
            raise _Refusal(400, INVALID_PARAMS, f'"params._meta" needs "{CLIENT_CAPABILITIES_KEY}" (an object)')
        if CLIENT_INFO_KEY in meta and not isinstance(meta[CLIENT_INFO_KEY], dict):
            raise _Refusal(400, INVALID_PARAMS, f'"params._meta.{CLIENT_INFO_KEY}" must be an object')
        level = meta.get(LOG_LEVEL_KEY)
        if level is not None and level not in LOG_LEVELS:
            raise _Refusal(
                400, INVALID_PARAMS, f'"params._meta.{LOG_LEVEL_KEY}" must be one of {", ".join(LOG_LEVELS)}'
            )

        _mirror(headers, b"mcp-protocol-version", "MCP-Protocol-Version", version)
        _mirror(headers, b"mcp-method", "Mcp-Method", request.method)
        name_param = self._name_param.get(request.method)
        if name_param is not None:
            target = params.get(name_param)
            if not isinstance(target, str):
                raise _Refusal(400, INVALID_PARAMS, f'"{name_param}" must be a string', {"field": name_param})
            _mirror(headers, b"mcp-name", "Mcp-Name", target)
            if request.method == "tools/call":
                self._check_param_headers(target, params.get("arguments"), param_headers)

        revision = find_revision(version)
        if revision is None or revision.era is not Era.STATELESS:
            raise _Refusal(
                400,
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version: {version}",
                {"supported": self._supported, "requested": version},
            )
        method = request.method
        if method in self._task_methods:
            return revision, meta
        if method in REMOVED_METHODS:
            raise _Refusal(404, METHOD_NOT_FOUND, f"Method not found: {method} was removed in protocol {revision}")
        if method not in self._dispatcher.methods and method not in ("server/discover", "subscriptions/listen"):
            raise _Refusal(404, METHOD_NOT_FOUND, f"Method not found: {method}")
        if method == "subscriptions/listen" and not self._listen_supported():
            raise _Refusal(404, METHOD_NOT_FOUND, "Method not found: this server sends no change notifications")
        return revision, meta

    def _check_param_headers(self, tool: str, arguments: object, param_headers: Mapping[bytes, bytes]) -> None:
        definition = self._handler.tool_definition(tool)
        if definition is None:
            return
        annotated = self._header_params.get(definition)
        if annotated is None:
            annotated = self._header_params[definition] = header_params(definition.input_schema)
        problem = check_param_headers(annotated, arguments, param_headers)
        if problem is not None:
            raise _Refusal(400, HEADER_MISMATCH, problem)

    # --- dispatch --------------------------------------------------------------------------

    async def _respond(
        self,
        exchange: Exchange,
        receive: Receive,
        request: Request,
        revision: Revision,
        meta: Mapping[str, Any],
        source: RequestSource,
    ) -> _Answer:
        method = request.method
        params = request.params
        outbound = _StatelessOutbound(exchange, receive)
        ctx = self._context(request.id, method, revision, meta, outbound, source)
        try:
            if method == "server/discover":
                result = self._discover(revision)
            elif method == "tools/call" and self._task_methods:
                result = await self._tasks.call_tool(
                    self._handler, ctx, params, lambda: self._with_inputs(ctx, outbound, request)
                )
            elif method in INPUT_REQUIRED_METHODS:
                result = await self._with_inputs(ctx, outbound, request)
            elif method in self._task_methods:
                result = await self._task_methods[method](ctx, params)
            else:
                result = await self._dispatcher.methods[method](ctx, params)
        except HttpRefusal as refusal:
            error = error_message(request.id, refusal.code, refusal.message, refusal.data)
            if exchange.streaming:  # only the JSON-RPC error can still reach the client
                return _Answer(error)
            return _Answer(error, refusal.status, refusal.headers, refusal)
        except McpError as exc:
            code, text, data = dialects.error(exc, revision)
            return _Answer(error_message(request.id, code, text, data), _STATUS.get(code, 200))
        except asyncio.CancelledError:
            if not outbound.client_gone:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return _Answer(None)
        except StoreUnavailable:
            raise  # the shared store is away: a 503 saying to come back (`endpoint.handle`), not an internal error
        except Exception as exc:
            err = internal_error(method, exc)
            return _Answer(error_message(request.id, err.code, err.message))
        finally:
            outbound.stop_watching()
        if "resultType" not in result:
            result["resultType"] = "complete"
            if method in CACHEABLE_METHODS:
                hint = self._handler.cache_hint(method)
                result["ttlMs"] = hint.ttl_ms
                result["cacheScope"] = hint.scope
        self._stamp_server_info(result, revision)
        return _Answer(result_message(request.id, result))

    def _context(
        self, request_id: RequestId, method: str, revision: Revision, meta: Mapping[str, Any],
        outbound: _StatelessOutbound, source: RequestSource,
    ) -> RequestContext:  # fmt: skip
        """What a handler is given for a request: everything it knows of the client comes from the request's `_meta`."""
        return RequestContext(
            revision=revision, request_id=request_id, method=method, meta=meta,
            client_capabilities=meta[CLIENT_CAPABILITIES_KEY], client_info=meta.get(CLIENT_INFO_KEY), session_id=None,
            log_level=meta.get(LOG_LEVEL_KEY), outbound=outbound, changes=self._hub, source=source,
        )  # fmt: skip

    def _stamp_server_info(self, result: JsonObject, revision: Revision) -> None:
        info = self._server_info[revision.rank]
        meta = result.get("_meta")
        result["_meta"] = {**meta, SERVER_INFO_KEY: info} if meta else {SERVER_INFO_KEY: info}

    async def _with_inputs(self, ctx: RequestContext, outbound: _StatelessOutbound, request: Request) -> JsonObject:
        """Run a method that may need client input, resuming from a sealed requestState."""
        params = request.params
        raw_state = params.get("requestState")
        if raw_state is not None:
            prior = await self._sealer.open_once(raw_state, _digest(request, self._endpoint_id), _principal(ctx))
            outbound.answers = dict(prior.answers)
            ctx.state.update(prior.handler_state)
        if "inputResponses" in params:
            responses = params["inputResponses"]
            if not isinstance(responses, dict):
                raise invalid_params('"inputResponses" must be an object', {"field": "inputResponses"})
            answers = outbound.answers if raw_state is not None else {}
            for key, response in responses.items():
                answers[key] = check_input_response(key, response)
            outbound.answers = answers
        try:
            return await self._dispatcher.methods[request.method](ctx, params)
        except UrlElicitationRequired as exc:
            needed = {
                str(e.get("elicitationId", i)): elicitation_url(
                    str(e.get("message", "")), str(e.get("url", "")), str(e.get("elicitationId", i))
                )
                for i, e in enumerate(exc.elicitations)
            }
            for input_request in needed.values():
                check_client_supports(input_request, ctx.revision, ctx.client_capabilities)
            missing = needed
        except InputRequired as exc:
            missing = exc.requests
        carried = {k: outbound.answers[k] for k in outbound.consumed}
        return {
            "resultType": "input_required",
            "inputRequests": {
                key: {"method": r.method, "params": dialects.input_request_params(r, ctx.revision)}
                for key, r in missing.items()
            },
            "requestState": self._sealer.seal(
                _digest(request, self._endpoint_id), RoundState(carried, ctx.state), _principal(ctx)
            ),
        }

    def _discover(self, revision: Revision) -> JsonObject:
        result: JsonObject = {
            "supportedVersions": list(self._supported),
            "capabilities": dialects.server_capabilities(self._handler.features, revision),
        }
        if self._handler.instructions:
            result["instructions"] = self._handler.instructions
        return result

    # --- subscriptions/listen ----------------------------------------------------------------

    def _listen_supported(self) -> bool:
        f = self._handler.features
        return f.tools_list_changed or f.prompts_list_changed or f.resources_list_changed or f.resources_subscribe

    async def _subscribed(
        self, request: Request, revision: Revision, meta: Mapping[str, Any], source: RequestSource,
        exchange: Exchange, receive: Receive, uris: dict[str, None],
    ) -> dict[str, None]:  # fmt: skip
        outbound = _StatelessOutbound(exchange, receive)
        ctx = self._context(request.id, "resources/subscribe", revision, meta, outbound, source)
        try:
            return await _taken(self._handler, ctx, uris)
        finally:
            outbound.stop_watching()

    async def _listen(
        self, exchange: Exchange, receive: Receive, request: Request, revision: Revision, meta: Mapping[str, Any],
        source: RequestSource,
    ) -> None:  # fmt: skip
        wanted = request.params.get("notifications", {})
        if not isinstance(wanted, dict):
            await exchange.json(400, error_message(request.id, INVALID_PARAMS, '"notifications" must be an object'))
            return
        features = self._handler.features
        uris = wanted.get("resourceSubscriptions")
        # Kept as long as the stream is open: bounded as a session's subscriptions are (dict: unique, in order).
        subscribed: dict[str, None] = {}
        if features.resources_subscribe and isinstance(uris, list):
            subscribed = dict.fromkeys(u for u in uris if isinstance(u, str))
            weight = sum(len(uri.encode()) for uri in subscribed)
            most = self._options.limits.max_session_bytes
            if len(subscribed) > MAX_LISTEN_SUBSCRIPTIONS:  # each one is the handler's to take (an MCP server's)
                text = (f"resourceSubscriptions names {len(subscribed)} URIs; a stream takes "
                        f"{MAX_LISTEN_SUBSCRIPTIONS} at most")  # fmt: skip
                data = {"field": "notifications.resourceSubscriptions"}
                await exchange.json(400, error_message(request.id, INVALID_PARAMS, text, data))
                return
            if weight > most:
                text = (
                    f"resourceSubscriptions take {weight} bytes; a subscriptions/listen stream keeps at most "
                    f"{most} bytes of subscribed URIs (max_session_bytes)"
                )
                data = {"field": "notifications.resourceSubscriptions"}
                await exchange.json(400, error_message(request.id, INVALID_PARAMS, text, data))
                return
        if not exchange.accepts_sse:
            await exchange.json(
                400,
                error_message(
                    request.id,
                    INVALID_REQUEST,
                    "subscriptions/listen answers with an SSE stream: send Accept: text/event-stream",
                ),
            )
            return
        limit = self._options.limits.max_listeners
        if len(self._hub) >= limit:
            text = f"This endpoint already serves {limit} open streams (max_listeners); try again later"
            await exchange.json(503, error_message(request.id, SERVER_BUSY, text), [(b"retry-after", b"5")])
            return
        honoured: JsonObject = {}
        for key, offered in (
            ("toolsListChanged", features.tools_list_changed),
            ("promptsListChanged", features.prompts_list_changed),
            ("resourcesListChanged", features.resources_list_changed),
        ):
            if offered and wanted.get(key) is True:
                honoured[key] = True
        if features.resources_subscribe and isinstance(uris, list):
            # the handler is asked, as for the session era's resources/subscribe: it may refuse a URI (one it does
            # not serve), or subscribe upstream; only what it takes is honoured
            subscribed = await self._subscribed(request, revision, meta, source, exchange, receive, subscribed)
            honoured["resourceSubscriptions"] = list(subscribed)
        kinds = {"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"}

        def wants(kind: ChangeKind, uri: str | None) -> bool:
            return uri in subscribed if kind == "resource" else kinds[kind] in honoured

        stream_meta = {SUBSCRIPTION_ID_KEY: request.id}
        listener = Listener(wants, stream_meta)
        self._hub.attach(listener)
        try:
            await exchange.event(
                notification_message(
                    "notifications/subscriptions/acknowledged", {"_meta": stream_meta, "notifications": honoured}
                )
            )
            server_ended = await listener.pump(exchange, receive, self._options.keepalive_seconds)
            if server_ended:
                final: JsonObject = {"resultType": "complete", "_meta": dict(stream_meta)}
                await exchange.event(result_message(request.id, final))
        finally:
            self._hub.detach(listener)
            await exchange.close()


async def _taken(handler: McpHandler, ctx: RequestContext, uris: dict[str, None]) -> dict[str, None]:
    """Those of `uris` the handler's `subscribe_resource` takes (one refused is left out)."""
    taken: dict[str, None] = {}
    for uri in uris:
        try:
            await handler.subscribe_resource(ctx, uri)
        except McpError:
            continue
        taken[uri] = None
    return taken


def _principal(ctx: RequestContext) -> str | None:
    """Whom a requestState is sealed to: the authenticated caller, if any."""
    caller = ctx.caller
    return caller.principal if caller is not None else None


def _digest(request: Request, endpoint_id: str) -> str:
    """What a requestState is bound to: the endpoint (every exposition of a gateway shares the sealer's keys),
    method, target and arguments (absent counts as {})."""
    params = request.params
    target = params.get(_NAME_PARAM[request.method])
    named = target if isinstance(target, str) else None
    return request_digest(request.method, named, params.get("arguments") or {}, endpoint_id)


def _mirror(headers: Mapping[bytes, bytes], name: bytes, label: str, body_value: str) -> None:
    """Check that a required mirror header is present and equals the body value."""
    raw = headers.get(name)
    if raw is None:
        raise _Refusal(400, HEADER_MISMATCH, f"Missing required header {label}", {"header": label})
    try:
        value = decode_header_value(raw)
    except MalformedHeader as exc:
        raise _Refusal(400, HEADER_MISMATCH, f"Header {label} {exc}", {"header": label}) from exc
    if value != body_value:
        raise _Refusal(
            400,
            HEADER_MISMATCH,
            f"Header mismatch: {label} header value {value!r} does not match body value {body_value!r}",
            {"header": label, "expected": body_value, "received": value},
        )


class _StatelessOutbound(Outbound):
    """2026-07-28: notifications on the request's SSE stream; input from retries, never requests."""

    __slots__ = ("_exchange", "_receive", "_request_task", "_watcher", "answers", "client_gone", "consumed")

    def __init__(self, exchange: Exchange, receive: Receive) -> None:
        self._exchange = exchange
        self._receive = receive
        self._request_task = asyncio.current_task()
        """The task answering the request: what a disconnect cancels (a notification may be sent from another, such
        as the reader of an upstream's stream)."""
        self._watcher: asyncio.Task[None] | None = None
        self.answers: dict[str, Any] = _NO_ANSWERS
        self.consumed: set[str] = set()
        self.client_gone = False

    async def notify(self, method: str, params: JsonObject) -> None:
        if not self._exchange.accepts_sse or self._exchange.finished:
            return
        if not self._exchange.streaming:
            self._watch_for_disconnect()
        await self._exchange.event(notification_message(method, params))

    def _watch_for_disconnect(self) -> None:
        """Closing the response stream cancels the request (2026-07-28)."""
        task = self._request_task
        if task is None or self._watcher is not None:
            return

        async def watch() -> None:
            await wait_for_disconnect(self._receive)
            self.client_gone = True
            task.cancel()

        self._watcher = asyncio.create_task(watch())

    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def request_inputs(self, ctx: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        if ctx.method not in INPUT_REQUIRED_METHODS:
            raise McpError(INTERNAL_ERROR, f"{ctx.method} may not ask the client for input")
        for request in requests.values():
            check_client_supports(request, ctx.revision, ctx.client_capabilities)
        missing = {key: r for key, r in requests.items() if key not in self.answers}
        self.consumed.update(key for key in requests if key in self.answers)
        if missing:
            raise InputRequired(missing)
        return {key: self.answers[key] for key in requests}
