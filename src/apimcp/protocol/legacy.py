"""The session era: revisions 2024-11-05 to 2025-11-25 over Streamable HTTP.

`initialize` negotiates a revision and mints an MCP-Session-Id; every later
request must carry it (400 without, 404 when unknown, expired or deleted).
JSON-RPC errors of requests inside a valid session travel in HTTP 200; only
transport-level problems use 4xx. Server-to-client requests (elicitation,
sampling, roots) and request-scoped notifications travel on the SSE stream
that answers the POST; the client's responses arrive as separate POSTs and are
matched to the waiting handler here. The GET stream carries change
notifications, first those its session missed while it had none open
(`missed.py`). Batches are accepted in 2025-03-26 sessions only; the layer in front
may allow only their first messages (`batch_allowance.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimcp.protocol import dialects
from apimcp.protocol.batch_allowance import Allowance
from apimcp.protocol.caller import NO_SOURCE, RequestSource, caller_key
from apimcp.protocol.context import InputRequired, Outbound, RequestContext, check_client_supports
from apimcp.protocol.dispatch import INPUT_REQUIRED_METHODS, Dispatcher, Method, internal_error
from apimcp.protocol.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_BUSY,
    HttpRefusal,
    McpError,
    invalid_params,
)
from apimcp.protocol.event_store import StreamRecorder, split_event_id
from apimcp.protocol.exchange import Exchange, Receive, encode, wait_for_disconnect
from apimcp.protocol.jsonrpc import (
    InvalidMessage,
    JsonObject,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    error_message,
    notification_message,
    request_message,
    result_message,
)
from apimcp.protocol.listeners import ChangeHub, ChangeKind, Listener
from apimcp.protocol.missed import MissedNotifications
from apimcp.protocol.models import LOG_LEVELS, InputRequest
from apimcp.protocol.observe import RequestRecord, outcome_of, target_of
from apimcp.protocol.options import EndpointOptions
from apimcp.protocol.relay import RelayKind
from apimcp.protocol.sessions import Session, SessionChange, SessionsFull, new_session_id
from apimcp.protocol.tasks.methods import SessionTasks
from apimcp.protocol.tasks.runner import TaskRunner, TaskSettings
from apimcp.protocol.versions import (
    LATEST_SESSION_REVISION,
    Era,
    find_revision,
)

SESSION_HEADER = b"mcp-session-id"
_RETRY_SOON = (b"retry-after", b"1")
_RETRY_LATER = (b"retry-after", b"5")


@dataclass(slots=True)
class _Live:
    """Process-local state of one session: its GET stream and requests awaiting the client."""

    stream: Listener | None = None
    pending: dict[RequestId, asyncio.Future[Response]] = field(default_factory=dict)


class SessionEra:
    """Serves session-era traffic for one endpoint."""

    def __init__(self, endpoint_id: str, dispatcher: Dispatcher, hub: ChangeHub, options: EndpointOptions) -> None:
        self._endpoint_id = endpoint_id
        self._hub = hub
        self._options = options
        self._store = options.sessions
        self._events = options.events
        self._live: dict[str, _Live] = {}
        self._active: dict[str, int] = {}  # requests in progress, by session
        self._max_active = options.limits.max_requests_per_session
        self._resumed: dict[str, int] = {}  # POST streams resumed on a GET and followed now, by session
        self._inflight: dict[tuple[str, RequestId], asyncio.Task[Any]] = {}
        self._cancelled: set[tuple[str, RequestId]] = set()
        # Ids of our requests to clients: never reused, and, started at random, distinct from other replicas'
        # (an answer relayed to every replica is taken only by the one that asked).
        self._request_ids = itertools.count(secrets.randbelow(1 << 40) << 12 | 1)
        self._relay = options.relay
        self._relay.join(endpoint_id, self)
        self._missed = (
            MissedNotifications(options.events.backlog, endpoint_id, self._store.idle_timeout)
            if options.events is not None and options.session_era
            else None
        )
        if self._missed is not None:
            hub.watch(self._missed.changed)
        self._tasks = SessionTasks(TaskRunner(TaskSettings(store=options.tasks), endpoint_id))
        self.use(dispatcher)

    def stop_tasks(self) -> None:
        self._tasks.runner.stop()

    def use(self, dispatcher: Dispatcher) -> None:
        """Serve another handler from now on; sessions, streams and pending requests carry over."""
        methods: dict[str, Method] = dict(dispatcher.methods)
        methods["ping"] = self._ping
        features = dispatcher.handler.features
        if features.logging:
            methods["logging/setLevel"] = self._set_level
        if features.resources_subscribe:
            methods["resources/subscribe"] = self._subscribe
            methods["resources/unsubscribe"] = self._unsubscribe
        if features.tasks and features.tools:
            methods.update(self._tasks.methods)
            handler, call_tool = dispatcher.handler, dispatcher.call_tool

            async def tools_call(ctx: RequestContext, params: JsonObject) -> JsonObject:
                return await self._tasks.call_tool(handler, ctx, params, lambda: call_tool(ctx, params))

            methods["tools/call"] = tools_call
        self._dispatcher, self._handler, self._methods = dispatcher, dispatcher.handler, methods

    # --- HTTP verbs --------------------------------------------------------------------------

    async def post(
        self,
        exchange: Exchange,
        payload: object,
        session_id: str | None,
        header_version: str | None,
        source: RequestSource = NO_SOURCE,
    ) -> None:
        if isinstance(payload, list):
            await self._batch(exchange, payload, session_id, header_version, source)
            return
        try:
            message = classify(payload)
        except InvalidMessage as exc:
            await exchange.json(400, error_message(exc.request_id, exc.code, exc.message))
            return
        if isinstance(message, Request) and message.method == "initialize":
            await self._initialize(exchange, message, source)
            return
        request_id = message.id if isinstance(message, Request) else None
        session = await self._session(exchange, session_id, header_version, source, request_id)
        if session is None:
            return
        exchange.headers.append((SESSION_HEADER, session.id.encode()))
        if not isinstance(message, Request):
            await self._accept(session, message)
            await exchange.empty(202)
            return
        if not self._begin(session.id):
            await self._too_many(exchange, request_id)
            return
        if self._events is not None and session.revision.resumable_streams:
            exchange.recorder = StreamRecorder(self._events, session.id, "post")
        try:
            response = await self._request(exchange, session, message, source, alone=True)
        except HttpRefusal as refusal:
            error = error_message(message.id, refusal.code, refusal.message, refusal.data)
            await exchange.json(refusal.status, error, list(refusal.headers))
            return
        finally:
            self._end(session.id)
        if response is not None:
            await exchange.json(200, response)
            return
        # Cancelled: no response, by spec. A stream ends with nothing more (and says so to a client resuming
        # it); one not opened yet is opened and ended, since a POST of a request is answered with JSON or SSE.
        if exchange.recorder is not None:
            await exchange.recorder.end()
        if exchange.streaming or exchange.accepts_sse:
            await exchange.open_stream()
            await exchange.close()
        else:
            await exchange.empty(204)

    async def get(
        self,
        exchange: Exchange,
        receive: Receive,
        session_id: str | None,
        header_version: str | None,
        source: RequestSource = NO_SOURCE,
        last_event_id: str | None = None,
    ) -> None:
        session = await self._session(exchange, session_id, header_version, source)
        if session is None:
            return
        if not exchange.accepts_sse:
            text = "The GET stream is an SSE stream: send Accept: text/event-stream"
            await exchange.refuse(406, text)
            return
        resumed: tuple[str, int] | None = None
        if last_event_id is not None and self._events is not None and session.revision.resumable_streams:
            resumed = split_event_id(last_event_id)
            info = await self._events.info(resumed[0]) if resumed is not None else None
            if resumed is None or info is None or info.session_id != session.id:
                resumed = None  # unknown, expired or not this session's: a new stream, nothing to replay
            elif info.kind == "post":
                await self._resume_counted(exchange, receive, session, *resumed)
                return
        live = self._live_of(session.id)
        if live.stream is not None:
            text = "This session already has an open GET stream"
            await exchange.refuse(409, text)
            return
        if self._streams_full():
            self._forget_if_idle(session.id, live)
            await self._refuse_streams(exchange)
            return

        def wants(kind: ChangeKind, uri: str | None) -> bool:
            return kind != "resource" or uri in session.subscriptions

        gone = False
        # An open stream keeps its session alive, and notices within a tick when it has ended; it holds the
        # session's backlog (nothing is parked for it meanwhile) for three ticks at a time.
        tick = min(self._options.keepalive_seconds, self._store.idle_timeout / 3)
        holder, lease = secrets.token_hex(8), 3 * tick
        missed = self._missed

        async def session_lives() -> bool:
            nonlocal gone
            gone = not await self._store.touch(session.id)
            if not gone and missed is not None:
                await missed.renew(session.id, holder, lease)
            return not gone

        listener = live.stream = Listener(wants)
        self._hub.attach(listener)
        exchange.headers.append((SESSION_HEADER, session.id.encode()))
        if self._events is not None and session.revision.resumable_streams:
            exchange.recorder = StreamRecorder(self._events, session.id, "get", resumed[0] if resumed else None)
        try:
            backlog = await missed.opened(session, holder, lease) if missed is not None else []
            await exchange.open_stream()
            if resumed is not None:
                replayed = await self._replay(exchange, *resumed)
                if exchange.recorder is not None:
                    exchange.recorder.sent(replayed)
            for message in backlog:  # what the session missed while it had no stream open
                await exchange.event(message)
            await listener.pump(exchange, receive, tick, session_lives)
        finally:
            self._hub.detach(listener)
            # Ended: expired, or deleted on another replica, or here (a DELETE let go of its live state, and of its
            # backlog, which a stream closing after it must not make again for its idle timeout).
            gone = gone or self._live.get(session.id) is not live
            if missed is not None and not gone:
                await missed.closed(session.id, holder)  # before the stream is gone here: nothing falls between
            if live.stream is listener:
                live.stream = None
            if gone:  # as a DELETE here: release who waits for the client
                self._end_live(session.id)
                if missed is not None:
                    await missed.forget(session.id)
            else:
                self._forget_if_idle(session.id, live)
                if missed is not None:
                    missed.park(session.id, listener.undelivered())
            await exchange.close()

    async def _replay(self, exchange: Exchange, stream: str, number: int, wait_seconds: float = 0.0) -> int:
        """Send what the store kept of `stream` after event `number`; the number of the last one sent."""
        assert self._events is not None
        for kept, data in await self._events.after(stream, number, wait_seconds):
            await exchange.replay(f"{stream}.{kept}".encode(), data)
            number = kept
        return number

    def _streams_full(self) -> bool:
        """Whether the endpoint serves `max_listeners` open streams: GET streams, and POST streams resumed on one."""
        return len(self._hub) + sum(self._resumed.values()) >= self._options.limits.max_listeners

    async def _refuse_streams(self, exchange: Exchange) -> None:
        limit = self._options.limits.max_listeners
        text = f"This endpoint already serves {limit} open streams (max_listeners); try again later"
        await exchange.refuse(503, text, [_RETRY_LATER], code=SERVER_BUSY)

    async def _resume_counted(
        self, exchange: Exchange, receive: Receive, session: Session, stream: str, number: int
    ) -> None:
        """`_resume_post`, if the endpoint's open streams (`max_listeners`, resumed ones included) and the session's
        resumed ones (as many as it may have requests in progress) leave room for one more."""
        resumed = self._resumed.get(session.id, 0)
        if resumed >= self._max_active:
            text = f"This session already follows {resumed} resumed streams (max_requests_per_session)"
            await exchange.refuse(429, text, [_RETRY_LATER], code=SERVER_BUSY)
            return
        if self._streams_full():
            await self._refuse_streams(exchange)
            return
        self._resumed[session.id] = resumed + 1
        try:
            await self._resume_post(exchange, receive, session, stream, number)
        finally:
            left = self._resumed.pop(session.id) - 1
            if left:
                self._resumed[session.id] = left

    async def _resume_post(
        self, exchange: Exchange, receive: Receive, session: Session, stream: str, number: int
    ) -> None:
        """A POST's stream, resumed on a GET: what was kept, then what comes, until its response (the request
        runs here or on another replica) or until the client leaves or the stream is forgotten."""
        assert self._events is not None
        events = self._events
        tick = min(self._options.keepalive_seconds, 1.0)
        exchange.headers.append((SESSION_HEADER, session.id.encode()))
        await exchange.open_stream()

        async def follow() -> None:
            nonlocal number
            while True:
                info = await events.info(stream)
                number = await self._replay(exchange, stream, number, 0.0 if info is None or info.ended else tick)
                if info is None or info.ended:
                    return
                await exchange.keepalive()

        follower = asyncio.ensure_future(follow())
        watcher = asyncio.ensure_future(wait_for_disconnect(receive))
        try:
            await asyncio.wait((follower, watcher), return_when=asyncio.FIRST_COMPLETED)
        finally:
            follower.cancel()
            watcher.cancel()
            await exchange.close()

    async def delete(
        self, exchange: Exchange, session_id: str | None, header_version: str | None, source: RequestSource = NO_SOURCE
    ) -> None:
        session = await self._session(exchange, session_id, header_version, source)
        if session is None:
            return
        await self._store.delete(session.id)
        self._end_live(session.id)
        if self._missed is not None:
            await self._missed.forget(session.id)
        self._relay.send(self, self._endpoint_id, "ended", session.id, b"null")
        await self._relay.sent()
        await exchange.empty(200)

    def notify(self, session_id: str, method: str, params: JsonObject) -> bool:
        """Queue a notification on the session's GET stream, here or (relayed) on another replica, or park it for
        the session's next GET stream when none is open anywhere; False when it can go nowhere (no stream here,
        no other replica, no backlog)."""
        message = notification_message(method, params)
        live = self._live.get(session_id)
        if live is not None and live.stream is not None:
            return live.stream.send(message)

        def elsewhere() -> None:
            self._relay.send(self, self._endpoint_id, "notify", session_id, encode(message))

        if self._missed is not None:
            self._missed.park(session_id, [message], elsewhere if self._relay.shared else None)
            return True
        if not self._relay.shared:
            return False
        elsewhere()
        return True

    def relayed(self, kind: RelayKind, session_id: str, body: bytes) -> None:
        """Act on what another replica received for a session whose live state may be here."""
        if kind == "ended":
            self._store.forget_copy(session_id)
        live = self._live.get(session_id)
        stream = live.stream if live is not None else None
        if kind == "cancel":
            self._cancel_here(session_id, orjson.loads(body))
        elif kind == "notify":
            if stream is not None:
                stream.send(orjson.loads(body))
            elif self._missed is not None:  # the stream it was sent to may have ended since: parked unless one is open
                self._missed.park(session_id, [orjson.loads(body)])
        elif live is None:
            return
        elif kind == "ended":
            self._end_live(session_id)
        elif kind == "answer":
            try:
                message = classify(orjson.loads(body))
            except (InvalidMessage, orjson.JSONDecodeError):
                return
            if isinstance(message, Response):
                self._answered_here(live, message)

    # --- lifecycle -------------------------------------------------------------------------

    async def _initialize(self, exchange: Exchange, request: Request, source: RequestSource) -> None:
        params = request.params
        requested = params.get("protocolVersion")
        capabilities = params.get("capabilities", {})
        client_info = params.get("clientInfo")
        problem = None
        if not isinstance(requested, str):
            problem = '"protocolVersion" must be a string'
        elif not isinstance(capabilities, dict):
            problem = '"capabilities" must be an object'
        elif client_info is not None and not isinstance(client_info, dict):
            problem = '"clientInfo" must be an object'
        if problem is not None:
            await exchange.json(400, error_message(request.id, INVALID_PARAMS, problem))
            return
        capabilities_json = orjson.dumps(capabilities)
        client_info_json = orjson.dumps(client_info) if client_info is not None else None
        problem = _too_heavy(capabilities_json, client_info_json, self._options.limits.max_session_bytes)
        if problem is not None:
            await exchange.json(400, error_message(request.id, INVALID_PARAMS, problem))
            return
        revision = find_revision(requested)
        if revision is None or revision.era is not Era.SESSION:
            revision = LATEST_SESSION_REVISION  # counter-offer the newest session revision
        session = Session(
            id=new_session_id(),
            endpoint=self._endpoint_id,
            revision=revision,
            capabilities_json=capabilities_json,
            client_info_json=client_info_json,
            principal=source.caller.principal if source.caller is not None else None,
            caller=caller_key(source.caller.principal if source.caller is not None else None, source.client),
        )
        try:
            await self._store.create(session)
        except SessionsFull as full:
            retry = (b"retry-after", str(full.retry_after).encode())
            if full.scope == "caller":  # this client's own doing: end a session (DELETE), or let one expire
                text = ("This caller has as many sessions on this endpoint as it may (max_sessions_per_caller): "
                        "end one with DELETE, or let one expire")  # fmt: skip
                await exchange.json(429, error_message(request.id, SERVER_BUSY, text), [retry])
                return
            text = (
                f"No room for another session on this {full.scope} (max_sessions"
                f"{'_per_endpoint' if full.scope == 'endpoint' else ''}); try again later"
            )
            await exchange.json(503, error_message(request.id, SERVER_BUSY, text), [retry])
            return
        result: JsonObject = {
            "protocolVersion": revision.version,
            "capabilities": dialects.server_capabilities(self._handler.features, revision),
            "serverInfo": dialects.implementation(self._handler.server_info, revision),
        }
        if self._handler.instructions:
            result["instructions"] = self._handler.instructions
        exchange.headers.append((SESSION_HEADER, session.id.encode()))
        await exchange.json(200, result_message(request.id, result))

    async def _session(
        self,
        exchange: Exchange,
        session_id: str | None,
        header_version: str | None,
        source: RequestSource,
        request_id: RequestId | None = None,
    ) -> Session | None:
        """The request's session, or None after answering 400/404 for a missing or unknown one (a session
        opened by another caller is unknown to this one)."""
        if session_id is None:
            text = "Missing MCP-Session-Id header: send initialize first to open a session"
            await exchange.json(400, error_message(request_id, INVALID_REQUEST, text))
            return None
        session = await self._store.get(session_id)
        caller = source.caller
        if (
            session is None
            or session.endpoint != self._endpoint_id
            or session.principal != (caller.principal if caller is not None else None)
        ):
            if session is None:
                self._end_live(session_id)
            text = "Unknown or expired session: initialize a new one"
            await exchange.json(404, error_message(request_id, INVALID_REQUEST, text))
            return None
        if header_version is not None and header_version != session.revision.version:
            if find_revision(header_version) is None:
                text = f"Unsupported MCP-Protocol-Version: {header_version!r}"
            else:
                text = (
                    f"MCP-Protocol-Version {header_version!r} does not match the session's "
                    f"negotiated version {session.revision.version!r}"
                )
            await exchange.json(400, error_message(request_id, INVALID_REQUEST, text))
            return None
        return session

    def _begin(self, session_id: str) -> bool:
        """Count a request of the session in progress; False when it has as many as it may."""
        active = self._active.get(session_id, 0)
        if active >= self._max_active:
            return False
        self._active[session_id] = active + 1
        return True

    def _end(self, session_id: str) -> None:
        remaining = self._active[session_id] - 1
        if remaining:
            self._active[session_id] = remaining
        else:
            del self._active[session_id]

    async def _too_many(self, exchange: Exchange, request_id: RequestId | None) -> None:
        limit = self._options.limits.max_requests_per_session
        text = f"This session already has {limit} requests in progress (max_requests_per_session)"
        await exchange.json(429, error_message(request_id, SERVER_BUSY, text), [_RETRY_SOON])

    def _end_live(self, session_id: str) -> None:
        """The session has ended: close its GET stream and give up on what it was asked."""
        live = self._live.pop(session_id, None)
        if live is not None:
            if live.stream is not None:
                live.stream.close()
            for future in live.pending.values():
                future.cancel()

    async def _accept(self, session: Session, message: Notification | Response) -> None:
        """Take a notification or a response to one of our requests (answered 202)."""
        if isinstance(message, Response):
            live = self._live.get(session.id)
            if (live is None or not self._answered_here(live, message)) and self._relay.shared:
                self._relay.send(self, self._endpoint_id, "answer", session.id, encode(_response_payload(message)))
            return
        if message.method == "notifications/initialized":
            if not session.initialized:
                await self._store.change(session, SessionChange("initialized"))
        elif message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if not isinstance(request_id, str | int):
                return
            if not self._cancel_here(session.id, request_id) and self._relay.shared:
                self._relay.send(self, self._endpoint_id, "cancel", session.id, orjson.dumps(request_id))

    def _answered_here(self, live: _Live, response: Response) -> bool:
        """Hand the client's answer to the handler waiting for it here; False when none is."""
        future = live.pending.get(response.id)
        if future is None:
            return False
        if not future.done():
            future.set_result(response)
        return True

    def _cancel_here(self, session_id: str, request_id: object) -> bool:
        """Cancel the session's request if it runs here; False when it does not."""
        if not isinstance(request_id, str | int):
            return False
        key = (session_id, request_id)
        inflight = self._inflight.get(key)
        if inflight is None:
            return False
        self._cancelled.add(key)
        inflight.cancel()
        return True

    # --- requests --------------------------------------------------------------------------

    async def _request(
        self, exchange: Exchange, session: Session, request: Request, source: RequestSource, *, alone: bool = False
    ) -> JsonObject | None:
        """The JSON-RPC response to one request (None when the client cancelled it). An `HttpRefusal` of a
        request `alone` in its POST escapes, so that the POST's answer carries its status, unless it streams."""
        observer = self._handler.observer
        if observer is None:
            return await self._answer(exchange, session, request, source, alone)
        target = target_of(request.method, request.params)
        observer.request_started(request.method, target, source)
        started = time.perf_counter()
        response: JsonObject | None = None
        refused: HttpRefusal | None = None
        try:
            response = await self._answer(exchange, session, request, source, alone)
        except HttpRefusal as refusal:
            refused = refusal  # the POST answers with its status: that is what the client gets
            raise
        finally:
            outcome, code = outcome_of(response, refused)
            record = RequestRecord(
                method=request.method,
                target=target,
                request_id=request.id,
                session_id=session.id,
                revision=session.revision.version,
                outcome=outcome,
                error_code=code,
                duration_ms=(time.perf_counter() - started) * 1000,
                source=source,
                status=refused.status if refused is not None else None,
                reason=refused.reason if refused is not None else None,
            )
            observer.request_finished(record)
        return response

    async def _answer(
        self, exchange: Exchange, session: Session, request: Request, source: RequestSource, alone: bool
    ) -> JsonObject | None:
        revision = session.revision
        method = self._methods.get(request.method)
        if method is None:
            return error_message(request.id, -32601, f"Method not found: {request.method}")
        meta = request.params.get("_meta")
        ctx = RequestContext(
            revision=revision,
            request_id=request.id,
            method=request.method,
            meta=meta if isinstance(meta, dict) else {},
            client_capabilities=session.capabilities_json,
            client_info=session.client_info_json,
            session_id=session.id,
            log_level=(session.log_level or "debug") if self._handler.features.logging else None,
            outbound=_SessionOutbound(self, exchange, session),
            changes=self._hub,
            source=source,
        )
        key = (session.id, request.id)
        task = asyncio.current_task()
        if task is not None:
            self._inflight[key] = task
        try:
            result = await method(ctx, request.params)
        except HttpRefusal as refusal:
            if alone and not exchange.streaming:
                raise
            return error_message(request.id, refusal.code, refusal.message, refusal.data)
        except McpError as exc:
            code, text, data = dialects.error(exc, revision)
            return error_message(request.id, code, text, data)
        except InputRequired:
            return error_message(request.id, INTERNAL_ERROR, "Internal error")
        except asyncio.CancelledError:
            if key not in self._cancelled:
                raise
            if task is not None:
                task.uncancel()
            return None
        except Exception as exc:
            err = internal_error(request.method, exc)
            return error_message(request.id, err.code, err.message)
        finally:
            self._inflight.pop(key, None)
            self._cancelled.discard(key)
        return result_message(request.id, result)

    async def _batch(
        self,
        exchange: Exchange,
        payload: list[Any],
        session_id: str | None,
        header_version: str | None,
        source: RequestSource,
    ) -> None:
        limits = self._options.limits
        if not payload:
            await exchange.json(400, error_message(None, INVALID_REQUEST, "An empty JSON-RPC batch is invalid"))
            return
        if len(payload) > limits.max_batch_messages:
            text = (
                f"A JSON-RPC batch may hold at most {limits.max_batch_messages} messages "
                f"(max_batch_messages); this one holds {len(payload)}"
            )
            await exchange.json(400, error_message(None, INVALID_REQUEST, text))
            return
        if any(isinstance(m, dict) and m.get("method") == "initialize" for m in payload):
            await exchange.json(
                400, error_message(None, INVALID_REQUEST, "initialize must not be part of a JSON-RPC batch")
            )
            return
        session = await self._session(exchange, session_id, header_version, source)
        if session is None:
            return
        if not session.revision.accepts_batches:
            await exchange.json(
                400,
                error_message(
                    None,
                    INVALID_REQUEST,
                    f"JSON-RPC batches are not part of protocol {session.revision}; "
                    "they are accepted in 2025-03-26 sessions only",
                ),
            )
            return
        exchange.headers.append((SESSION_HEADER, session.id.encode()))
        if not self._begin(session.id):
            await self._too_many(exchange, None)
            return
        try:
            ask = source.batch_allowance
            allowance = await ask(len(payload)) if ask is not None and len(payload) > 1 else None
            responses = await self._run_batch(
                exchange, session, payload, limits.max_batch_response_bytes, source, allowance
            )
        finally:
            self._end(session.id)
        if not responses:
            await (exchange.close() if exchange.streaming else exchange.empty(202))
        elif exchange.streaming:
            for response in responses:
                await exchange.event(response)
            await exchange.close()
        else:
            await exchange.json(200, responses)

    async def _run_batch(
        self,
        exchange: Exchange,
        session: Session,
        payload: list[Any],
        budget: int,
        source: RequestSource,
        allowance: Allowance | None,
    ) -> list[orjson.Fragment]:
        """The batch's responses, each encoded once; once they weigh `budget` bytes, later requests are not run,
        nor are the messages after the first `allowance.messages` (the layer in front refused them)."""
        responses: list[orjson.Fragment] = []
        spent = 0
        allowed = len(payload) if allowance is None else allowance.messages
        for position, item in enumerate(payload):
            try:
                message = classify(item)
            except InvalidMessage as exc:
                response = error_message(exc.request_id, exc.code, exc.message)
            else:
                withheld = allowance if position >= allowed else None
                if not isinstance(message, Request):
                    if withheld is None:
                        await self._accept(session, message)
                    continue
                if withheld is not None:
                    response = error_message(message.id, withheld.code, withheld.message, withheld.data)
                elif spent > budget:
                    text = (
                        f"Not run: the responses of this batch already take more than {budget} bytes "
                        "(max_batch_response_bytes); send this request again, in a smaller batch"
                    )
                    response = error_message(message.id, INVALID_REQUEST, text)
                else:
                    answered = await self._request(exchange, session, message, source)
                    if answered is None:
                        continue
                    response = answered
            encoded = encode(response)
            spent += len(encoded)
            responses.append(orjson.Fragment(encoded))
        return responses

    # --- session-era methods ---------------------------------------------------------------

    async def _ping(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        return {}

    async def _set_level(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise invalid_params(f'"level" must be one of {", ".join(LOG_LEVELS)}', {"field": "level"})
        session = await self._store.get(ctx.session_id or "")
        if session is not None:
            await self._store.change(session, SessionChange("log_level", level))
        return {}

    async def _subscribe(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params('"uri" must be a string', {"field": "uri"})
        session = await self._store.get(ctx.session_id or "")
        limit = self._options.limits.max_session_bytes
        if session is not None and uri not in session.subscriptions and session.weight() + len(uri.encode()) > limit:
            raise invalid_params(
                f"A session keeps at most {limit} bytes of capabilities, clientInfo and subscribed URIs "
                "(max_session_bytes): unsubscribe from something first",
                {"field": "uri"},
            )
        await self._handler.subscribe_resource(ctx, uri)
        await self._update_subscriptions(ctx, uri, add=True)
        return {}

    async def _unsubscribe(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params('"uri" must be a string', {"field": "uri"})
        await self._update_subscriptions(ctx, uri, add=False)
        return {}

    async def _update_subscriptions(self, ctx: RequestContext, uri: str, *, add: bool) -> None:
        session = await self._store.get(ctx.session_id or "")
        if session is None:
            return
        await self._store.change(session, SessionChange("subscribe" if add else "unsubscribe", uri))

    # --- server-to-client requests ---------------------------------------------------------

    def _forget_if_idle(self, session_id: str, live: _Live) -> None:
        """Drop the live state of a session with no open stream and nothing pending."""
        if live.stream is None and not live.pending and self._live.get(session_id) is live:
            del self._live[session_id]

    def _live_of(self, session_id: str) -> _Live:
        live = self._live.get(session_id)
        if live is None:
            live = self._live[session_id] = _Live()
        return live

    async def ask_client(
        self, exchange: Exchange, session: Session, requests: Mapping[str, InputRequest]
    ) -> dict[str, Any]:
        live = self._live_of(session.id)
        loop = asyncio.get_running_loop()
        waiting: dict[str, tuple[RequestId, asyncio.Future[Response]]] = {}
        try:
            for key, request in requests.items():
                request_id: RequestId = next(self._request_ids)
                future: asyncio.Future[Response] = loop.create_future()
                live.pending[request_id] = future
                waiting[key] = (request_id, future)
                params = dialects.input_request_params(request, session.revision)
                await exchange.event(request_message(request_id, request.method, params))
            async with asyncio.timeout(self._options.client_request_timeout):
                await asyncio.gather(*(f for _, f in waiting.values()))
        except TimeoutError as exc:
            raise McpError(INTERNAL_ERROR, "The client did not answer the server's request in time") from exc
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the request itself is cancelled
            # The session ended (deleted, expired) and gave up on what it was asked.
            raise McpError(INTERNAL_ERROR, "The session ended before the client answered") from None
        finally:
            for request_id, _ in waiting.values():
                live.pending.pop(request_id, None)
            self._forget_if_idle(session.id, live)
        answers: dict[str, Any] = {}
        for key, (_, future) in waiting.items():
            response = future.result()
            if response.error is not None:
                reason = response.error.get("message", "no reason given")
                raise McpError(INTERNAL_ERROR, f"The client refused {requests[key].method}: {reason}")
            answers[key] = response.result or {}
        return answers


class _SessionOutbound(Outbound):
    """Session era: notifications and requests travel on the POST's SSE stream."""

    __slots__ = ("_era", "_exchange", "_session")

    def __init__(self, era: SessionEra, exchange: Exchange, session: Session) -> None:
        self._era = era
        self._exchange = exchange
        self._session = session

    async def notify(self, method: str, params: JsonObject) -> None:
        if not self._exchange.accepts_sse or self._exchange.finished:
            return
        if method == "notifications/progress" and not self._session.revision.progress_message:
            params = {k: v for k, v in params.items() if k != "message"}
        with contextlib.suppress(OSError):
            await self._exchange.event(notification_message(method, params))

    async def request_inputs(self, ctx: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        revision = self._session.revision
        for request in requests.values():
            check_client_supports(request, revision, self._session.client_capabilities)
        if not self._exchange.accepts_sse:
            raise McpError(
                INVALID_REQUEST,
                f"{ctx.method} needs to ask the client for input, which requires Accept: text/event-stream",
            )
        if ctx.method not in INPUT_REQUIRED_METHODS and ctx.method not in ("completion/complete", "tasks/result"):
            raise McpError(INTERNAL_ERROR, f"{ctx.method} may not ask the client for input")
        return await self._era.ask_client(self._exchange, self._session, requests)


def _response_payload(response: Response) -> JsonObject:
    payload: JsonObject = {"jsonrpc": "2.0", "id": response.id}
    if response.error is not None:
        payload["error"] = response.error
    else:
        payload["result"] = response.result or {}
    return payload


def _too_heavy(capabilities: bytes, client_info: bytes | None, limit: int) -> str | None:
    """What makes a session record larger than `limit` bytes, named; None when it fits."""
    info = len(client_info) if client_info is not None else 0
    if len(capabilities) + info <= limit:
        return None
    if len(capabilities) > limit:
        what = f'"capabilities" takes {len(capabilities)} bytes as JSON'
    elif info > limit:
        what = f'"clientInfo" takes {info} bytes as JSON'
    else:
        what = f'"capabilities" and "clientInfo" take {len(capabilities) + info} bytes as JSON'
    return f"{what}; a session keeps at most {limit} (max_session_bytes)"
