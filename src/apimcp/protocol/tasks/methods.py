"""The tasks surface of each era: how a tool call becomes a task and the `tasks/*` methods.

- 2026-07-28, the `io.modelcontextprotocol/tasks` extension: the server decides. A client that declared
  the extension (for its calls, or in one call's `_meta`) may receive a flat `CreateTaskResult`
  (`resultType: "task"`) for a tool whose policy allows it; `tasks/get` inlines the outcome or the pending
  `inputRequests`, `tasks/update` delivers input responses, `tasks/cancel` acknowledges. A tool that
  requires tasks refuses other clients with -32021.
- 2025-11-25 experimental tasks: the client asks, with a `task` param on `tools/call`, and receives
  `{task: ...}`; `tasks/get`, `tasks/result` (waits for the outcome, and asks the client on its own stream
  what the task waits for), `tasks/list` (the session's tasks) and `tasks/cancel`.

A task is reached only by the endpoint, session (session era) and authenticated caller that created it;
anything else is an unknown task (-32602), so ids reveal nothing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, cast

import orjson

from apimcp.protocol.context import RequestContext, check_input_response
from apimcp.protocol.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
    invalid_params,
)
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.models import InputRequest
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.tasks.records import RELATED_TASK_KEY, TASKS_EXTENSION, StoredTask, wire_task
from apimcp.protocol.tasks.runner import STOPPED, Created, TaskRunner

Call = Callable[[], Coroutine[Any, Any, JsonObject]]
Method = Callable[[RequestContext, JsonObject], Awaitable[JsonObject]]
LIST_LIMIT = 1_000
_STALE = {"code": STOPPED.code, "message": STOPPED.message}


def _task_id(params: Mapping[str, Any]) -> str:
    value = params.get("taskId")
    if not isinstance(value, str):
        raise invalid_params('"taskId" must be a string', {"field": "taskId"})
    return value


async def find(runner: TaskRunner, ctx: RequestContext, task_id: str) -> StoredTask:
    """The caller's own task, or -32602; a task whose runner stopped renewing its lease is failed first."""
    stored = await runner.store.get(task_id)
    caller = ctx.caller
    if (
        stored is None
        or stored.record.scope != runner.scope
        or stored.record.session_id != ctx.session_id
        or stored.record.owner != (caller.principal if caller is not None else None)
    ):
        raise invalid_params(f"Unknown task: {task_id}", {"field": "taskId"})
    record = stored.record
    if not record.terminal and record.lease_until < time.time():
        await runner.store.update(record.failed(_STALE))
        return await find(runner, ctx, task_id)
    return stored


async def cancel(runner: TaskRunner, ctx: RequestContext, stored: StoredTask) -> StoredTask | None:
    """End a running task as cancelled; None when it had ended already."""
    record = stored.record
    if record.terminal or not await runner.store.update(record.moved("cancelled", input_requests={})):
        return None
    runner.cancel_here(record.task_id)
    return await find(runner, ctx, record.task_id)


class StatelessTasks:
    """2026-07-28: the tasks extension."""

    def __init__(self, runner: TaskRunner) -> None:
        self.runner = runner
        self.methods: dict[str, Method] = {
            "tasks/get": self.get,
            "tasks/update": self.update,
            "tasks/cancel": self.cancel,
        }

    @staticmethod
    def negotiated(ctx: RequestContext) -> bool:
        extensions = ctx.client_capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions

    def _require(self, ctx: RequestContext) -> None:
        if not self.negotiated(ctx):
            raise McpError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{ctx.method} needs the {TASKS_EXTENSION} extension in the client's capabilities",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )

    async def call_tool(self, handler: McpHandler, ctx: RequestContext, params: JsonObject, call: Call) -> JsonObject:
        name = params.get("name")
        policy = handler.task_policy(name) if isinstance(name, str) else None
        if policy is None:
            return await call()
        if not self.negotiated(ctx):
            if policy.support == "required":
                self._require(ctx)
            return await call()
        outcome = await self.runner.run(ctx, policy, call)
        if isinstance(outcome, Created):
            return {"resultType": "task", **wire_task(StoredTask(outcome.record, {}), stateless=True, detailed=False)}
        return outcome

    async def get(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._require(ctx)
        stored = await find(self.runner, ctx, _task_id(params))
        return wire_task(stored, stateless=True, detailed=True)

    async def update(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._require(ctx)
        task_id = _task_id(params)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise invalid_params('"inputResponses" must be an object', {"field": "inputResponses"})
        checked = {key: check_input_response(key, value) for key, value in responses.items()}
        stored = await find(self.runner, ctx, task_id)
        # Only what the task waits for is kept; anything else is acknowledged and dropped.
        outstanding = {k: v for k, v in checked.items() if k in stored.pending()}
        if outstanding:
            await self.runner.store.respond(task_id, outstanding)
        return {}

    async def cancel(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._require(ctx)
        stored = await find(self.runner, ctx, _task_id(params))
        await cancel(self.runner, ctx, stored)
        return {}


class SessionTasks:
    """2025-11-25: experimental tasks, asked for by the client."""

    def __init__(self, runner: TaskRunner) -> None:
        self.runner = runner
        self.methods: dict[str, Method] = {
            "tasks/get": self.get,
            "tasks/result": self.result,
            "tasks/list": self.list,
            "tasks/cancel": self.cancel,
        }

    @staticmethod
    def _offered(ctx: RequestContext) -> None:
        if not ctx.revision.tasks:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {ctx.method} (tasks came with 2025-11-25)")

    async def call_tool(self, handler: McpHandler, ctx: RequestContext, params: JsonObject, call: Call) -> JsonObject:
        asked = params.get("task")
        if not ctx.revision.tasks:
            return await call()
        name = params.get("name")
        policy = handler.task_policy(name) if isinstance(name, str) else None
        if asked is None:
            if policy is not None and policy.support == "required":
                raise McpError(METHOD_NOT_FOUND, f'Tool {name} must be called as a task (with a "task" param)')
            return await call()
        if not isinstance(asked, dict):
            raise invalid_params('"task" must be an object', {"field": "task"})
        if policy is None:
            raise McpError(METHOD_NOT_FOUND, f"Tool {name} cannot be called as a task")
        ttl = self.runner.settings.ttl_for(asked.get("ttl"))
        outcome = await self.runner.run(ctx, TaskPolicy(policy.support, 0.0), call, ttl_ms=ttl)
        if isinstance(outcome, Created):
            return {"task": wire_task(StoredTask(outcome.record, {}), stateless=False, detailed=False)}
        return outcome

    async def get(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._offered(ctx)
        stored = await find(self.runner, ctx, _task_id(params))
        return wire_task(stored, stateless=False, detailed=False)

    async def list(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._offered(ctx)
        session_id = ctx.session_id or ""
        records = await self.runner.store.of_session(session_id)
        caller = ctx.caller
        owner = caller.principal if caller is not None else None
        mine = [r for r in records if r.scope == self.runner.scope and r.owner == owner][:LIST_LIMIT]
        return {"tasks": [wire_task(StoredTask(r, {}), stateless=False, detailed=False) for r in mine]}

    async def cancel(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        self._offered(ctx)
        stored = await find(self.runner, ctx, _task_id(params))
        ended = await cancel(self.runner, ctx, stored)
        if ended is None:
            now = await find(self.runner, ctx, stored.record.task_id)
            raise invalid_params(
                f"Task {now.record.task_id} has already ended ({now.record.status})", {"field": "taskId"}
            )
        return wire_task(ended, stateless=False, detailed=False)

    async def result(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        """Wait for the task's outcome, asking the client on this request's stream for what the task waits on."""
        self._offered(ctx)
        task_id = _task_id(params)
        related = {RELATED_TASK_KEY: {"taskId": task_id}}
        stored = await find(self.runner, ctx, task_id)
        while not stored.record.terminal:
            pending = stored.pending() if stored.record.status == "input_required" else {}
            if pending:
                asked = {
                    key: InputRequest(
                        method=cast(Any, wire["method"]), params={**wire.get("params", {}), "_meta": related}
                    )
                    for key, wire in pending.items()
                }
                await self.runner.store.respond(task_id, await ctx.request_inputs(asked))
            else:
                await self.runner.store.changed(task_id, 5.0)
            stored = await find(self.runner, ctx, task_id)
        record = stored.record
        if record.status == "completed" and record.result is not None:
            result: JsonObject = orjson.loads(record.result)
            result["_meta"] = {**(result.get("_meta") or {}), **related}
            return result
        if record.status == "failed" and record.error is not None:
            error = orjson.loads(record.error)
            raise McpError(error["code"], error["message"], error.get("data"))
        raise McpError(INTERNAL_ERROR, f"Task {task_id} was cancelled", {"taskId": task_id})
