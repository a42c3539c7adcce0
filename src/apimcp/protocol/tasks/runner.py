"""Running a call as a task: it starts as an ordinary request and goes on in the background once it becomes one.

`TaskRunner.run` starts the call and waits for the policy's `after_seconds`. A call that ends (or, in
2026-07-28, stops to ask for input) within that time is answered directly, unless the tool requires tasks,
in which case its outcome becomes an ended task. A call still running then becomes a task: its record is
stored before the client hears of it (so a `tasks/get` right after resolves), the request's context is
redirected so that input requests park the task (`input_required`) until a client's responses reach the
store, and the outcome is written when the call ends. A watcher per running task renews its lease (a task
whose runner died is reported failed by whoever reads it) and stops the call when another replica cancelled
it. Tasks a process runs are bounded (`max_running`), and those a store keeps by its `TaskLimits`: past either,
a call of a tool whose tasks are optional is answered directly (what the client would get without tasks), one
of a tool that requires them is refused (-32000 naming the limit). A result larger than `max_result_bytes`
fails its task, saying so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from apimcp.protocol import dialects
from apimcp.protocol.caller import caller_key
from apimcp.protocol.context import Outbound, RequestContext, check_client_supports, check_input_response
from apimcp.protocol.errors import INTERNAL_ERROR, SERVER_BUSY, McpError
from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.models import InputRequest
from apimcp.protocol.tasks.limits import TasksFull
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.tasks.records import LEASE_SECONDS, TaskRecord, new_task_id
from apimcp.protocol.tasks.store import TaskStore

log = logging.getLogger("apimcp.protocol")

DEFAULT_TTL_MS = 600_000
MIN_TTL_MS = 1_000
DEFAULT_POLL_INTERVAL_MS = 500
DEFAULT_MAX_RUNNING = 1_000


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSettings:
    """Where tasks are kept and how many run at once."""

    store: TaskStore
    ttl_ms: int = DEFAULT_TTL_MS
    """How long a task is kept after its last change, unless a 2025-11-25 client asks for less (or more, up to
    the store's `max_ttl_seconds`)."""
    poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS
    max_running: int = DEFAULT_MAX_RUNNING
    input_timeout: float = 300.0
    """Seconds a task waits for the client's input responses before it fails."""

    def ttl_for(self, requested: object) -> int:
        """The TTL a task gets when its client asks for `requested` (anything but a whole number: the default)."""
        longest = self.store.limits.max_ttl_ms
        if isinstance(requested, int) and not isinstance(requested, bool):
            return max(MIN_TTL_MS, min(requested, longest))
        return min(self.ttl_ms, longest)


@dataclass(frozen=True, slots=True)
class Created:
    """The call became a task: this record was stored."""

    record: TaskRecord


def error_object(exc: McpError, ctx: RequestContext) -> JsonObject:
    code, message, data = dialects.error(exc, ctx.revision)
    out: JsonObject = {"code": code, "message": message}
    if data is not None:
        out["data"] = data
    return out


class TaskRunner:
    """The tasks this process runs, for one endpoint."""

    def __init__(self, settings: TaskSettings, scope: str) -> None:
        self.settings = settings
        self.scope = scope
        self.store = settings.store
        self._jobs: dict[str, asyncio.Task[JsonObject]] = {}
        self._latest: dict[str, TaskRecord] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._stopping = False

    @property
    def running(self) -> int:
        return len(self._jobs)

    async def run(
        self,
        ctx: RequestContext,
        policy: TaskPolicy,
        call: Callable[[], Coroutine[Any, Any, JsonObject]],
        *,
        ttl_ms: int | None = None,
    ) -> JsonObject | Created:
        """The call's direct result, or the task it became. Errors of a call answered directly propagate."""
        if self._stopping or len(self._jobs) >= self.settings.max_running:
            if policy.support == "required":
                raise McpError(SERVER_BUSY, "Too many tasks are running on this server; try again later")
            return await call()
        window = policy.after_seconds
        job = asyncio.create_task(call())
        if window > 0:
            try:
                await asyncio.wait({job}, timeout=window)
            except asyncio.CancelledError:
                job.cancel()
                raise
        if job.done():
            if policy.support == "optional" or _asks_for_input(job):
                return job.result()
            return Created(await self._ended(ctx, job, ttl_ms))
        # Redirect first, synchronously: the call must not ask for input the old way while the record is stored.
        record = self._new(ctx, ttl_ms)
        stored: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._latest[record.task_id] = record
        outbound = _TaskOutbound(self, record.task_id, stored)
        outbound.previous = ctx.redirect(outbound)
        refusal: McpError = McpError(SERVER_BUSY, "A task of this id exists already; try again")
        try:
            created = await self.store.create(record)
        except TasksFull as full:
            created, refusal = False, full
        except BaseException:
            job.cancel()
            stored.set_result(False)
            raise
        stored.set_result(created)
        if not created:
            self._latest.pop(record.task_id, None)
            if policy.support == "required":
                job.cancel()
                raise refusal
            return await job  # it asks for input, if it does, the way it would have
        self._jobs[record.task_id] = job
        self._spawn(self._follow(record.task_id, job, ctx))
        return Created(record)

    def _new(self, ctx: RequestContext, ttl_ms: int | None) -> TaskRecord:
        now = time.time()
        principal = ctx.caller.principal if ctx.caller is not None else None
        return TaskRecord(
            task_id=new_task_id(),
            owner=principal,
            session_id=ctx.session_id,
            scope=self.scope,
            status="working",
            created_at=now,
            updated_at=now,
            quota=caller_key(principal, ctx.source.client),  # never the session: sessions are free to open
            ttl_ms=ttl_ms if ttl_ms is not None else self.settings.ttl_for(None),
            poll_interval_ms=self.settings.poll_interval_ms,
            lease_until=now + LEASE_SECONDS,
        )

    async def _ended(self, ctx: RequestContext, job: asyncio.Task[JsonObject], ttl_ms: int | None) -> TaskRecord:
        """A task for a call that already ended (a tool that requires tasks and was quick)."""
        record = self._outcome(self._new(ctx, ttl_ms), job, ctx, stopped=False)
        if not await self.store.create(record):  # TasksFull goes to the client as it is
            raise McpError(SERVER_BUSY, "A task of this id exists already; try again")
        return record

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _follow(self, task_id: str, job: asyncio.Task[JsonObject], ctx: RequestContext) -> None:
        """Renew the lease while the call runs, stop it when the task ended elsewhere, then store its outcome."""
        try:
            while not job.done():
                waiter = asyncio.ensure_future(self.store.changed(task_id, LEASE_SECONDS / 3))
                await asyncio.wait({job, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if job.done():
                    break
                try:
                    stored = await self.store.get(task_id)
                    if stored is None or stored.record.terminal:
                        job.cancel()
                        break
                    latest = self._latest[task_id]
                    if latest.lease_until - time.time() < LEASE_SECONDS * 2 / 3:
                        await self._write(latest)
                except Exception as exc:  # the store is away for a moment: the call goes on, asked again soon
                    log.warning("task %s: the task store did not answer (%s)", task_id, exc)
                    await asyncio.wait({job}, timeout=1.0)
            await asyncio.wait({job})
            ended = self._outcome(self._latest[task_id], job, ctx, stopped=self._stopping)
            try:
                await self.store.update(ended)
            except TasksFull as full:  # no room for its result: the task fails, saying why
                await self.store.update(self._latest[task_id].failed(error_object(full, ctx)))
        except Exception:
            log.exception("task %s: its outcome could not be stored", task_id)
        finally:
            self._jobs.pop(task_id, None)
            self._latest.pop(task_id, None)

    async def _write(self, record: TaskRecord) -> bool:
        renewed = replace(record, lease_until=time.time() + LEASE_SECONDS)
        self._latest[record.task_id] = renewed
        return await self.store.update(renewed)

    def _outcome(self, record: TaskRecord, job: asyncio.Task[JsonObject], ctx: RequestContext, *, stopped: bool
                 ) -> TaskRecord:  # fmt: skip
        return _outcome(record, job, ctx, stopped=stopped, max_result_bytes=self.store.limits.max_result_bytes)

    def stop(self) -> None:
        """The server stops: its running tasks end as failed (the client is told the server stopped), and calls
        from now on are answered directly."""
        self._stopping = True
        for job in self._jobs.values():
            job.cancel()

    def cancel_here(self, task_id: str) -> None:
        """Stop the call of a task this process runs (its record already says cancelled)."""
        job = self._jobs.get(task_id)
        if job is not None:
            job.cancel()

    async def inputs(self, task_id: str, wanted: Mapping[str, JsonObject]) -> dict[str, Any]:
        """Park the task until every request in `wanted` has a response in the store."""
        latest = self._latest[task_id]
        if not await self._write(latest.moved("input_required", input_requests=dict(wanted))):
            raise asyncio.CancelledError  # ended meanwhile (cancelled): stop here
        deadline = time.monotonic() + self.settings.input_timeout
        while True:
            stored = await self.store.get(task_id)
            if stored is None or stored.record.terminal:
                raise asyncio.CancelledError
            if all(key in stored.responses for key in wanted):
                answers = {key: check_input_response(key, stored.responses[key]) for key in wanted}
                await self._write(self._latest[task_id].moved("working", input_requests={}))
                return answers
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise McpError(INTERNAL_ERROR, "The client did not answer the task's input requests in time")
            await self.store.changed(task_id, min(remaining, LEASE_SECONDS / 3))
            if self._latest[task_id].lease_until - time.time() < LEASE_SECONDS * 2 / 3:
                await self._write(self._latest[task_id])


def _asks_for_input(job: asyncio.Task[JsonObject]) -> bool:
    """Whether a call that ended is a 2026-07-28 `input_required` round (answered directly, never a task)."""
    if job.cancelled() or job.exception() is not None:
        return False
    return job.result().get("resultType") == "input_required"


STOPPED = McpError(INTERNAL_ERROR, "The server running this task stopped before the task ended")


def _outcome(
    record: TaskRecord, job: asyncio.Task[JsonObject], ctx: RequestContext, *, stopped: bool, max_result_bytes: int
) -> TaskRecord:
    """The record of a task whose call ended (a call cancelled because the server stops failed the task; a result
    larger than `max_result_bytes` fails it too)."""
    if job.cancelled():
        if stopped:
            return record.failed(error_object(STOPPED, ctx))
        return record.moved("cancelled", input_requests={})
    exc = job.exception()
    if exc is None:
        result = job.result()
        if result.get("resultType") == "input_required":
            # Only a URL elicitation raised as an error ends up here: a task has no later round to retry in.
            err = McpError(INTERNAL_ERROR, "The call needs input this task cannot ask for")
            return record.failed(error_object(err, ctx))
        encoded = orjson.dumps(result)
        if len(encoded) > max_result_bytes:
            big = TasksFull(
                "max_result_bytes",
                f"The result takes {len(encoded)} bytes, more than the {max_result_bytes} a task keeps "
                "(max_result_bytes); call the tool without a task",
            )
            return record.failed(error_object(big, ctx))
        return record.moved("completed", input_requests={}, result=encoded)
    if not isinstance(exc, McpError):
        log.error("task %s failed", record.task_id, exc_info=exc)
        exc = McpError(INTERNAL_ERROR, "Internal error")
    return record.failed(error_object(exc, ctx))


class _TaskOutbound(Outbound):
    """A task's way to the client: notifications have no stream to go to; input requests park the task.

    Until its record is stored it waits; when the store refused it, the call goes on the way it started."""

    __slots__ = ("_runner", "_stored", "_task_id", "previous")

    def __init__(self, runner: TaskRunner, task_id: str, stored: asyncio.Future[bool]) -> None:
        self._runner = runner
        self._task_id = task_id
        self._stored = stored
        self.previous: Outbound | None = None

    async def notify(self, method: str, params: JsonObject) -> None:
        if not await asyncio.shield(self._stored) and self.previous is not None:
            await self.previous.notify(method, params)

    async def request_inputs(self, ctx: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        if not await asyncio.shield(self._stored) and self.previous is not None:
            return await self.previous.request_inputs(ctx, requests)
        wanted: dict[str, JsonObject] = {}
        for key, request in requests.items():
            check_client_supports(request, ctx.revision, ctx.client_capabilities)
            wanted[key] = {"method": request.method, "params": dialects.input_request_params(request, ctx.revision)}
        return await self._runner.inputs(self._task_id, wanted)
