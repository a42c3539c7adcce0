"""One exposition member's backend, as every call made on behalf of a request reaches it.

A tool's operation and a `file://` resource read alike: the call is prepared for its request (the headers the
member's policy passes on, the user's own credentials, asked for again once after a 401) and made with the
backend the runtime built for the member, instrumented when telemetry is on (a CLIENT span, a latency figure).
Whatever needs adding to every backend call of a request belongs here, not in one of its callers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from apimcp.backends.base import (
    AskClient,
    Backend,
    BackendResult,
    CallClient,
    CallExtras,
    Failure,
    LogToClient,
    Progress,
)
from apimcp.catalog.model import McpBinding, Operation
from apimcp.gateway.call_preparation import CallPreparation
from apimcp.protocol import RequestContext
from apimcp.protocol.errors import INVALID_PARAMS, McpError
from apimcp.protocol.models import InputRequest, LogLevel
from apimcp.resilience.cached import Cached

Notes = Callable[[str], str | None]
"""What the client may see of a text an MCP server sends it during a call (None: nothing): the plan's guardrails
(`Guardrails.note`)."""


class MemberBackend:
    """`backend`, called for a request with what `preparation` adds (None: nothing, the backend's own
    credentials alone)."""

    __slots__ = ("backend", "cached", "notes", "preparation")

    def __init__(
        self,
        backend: Backend,
        preparation: CallPreparation | None = None,
        cached: Cached | None = None,
        notes: Notes | None = None,
    ) -> None:
        self.backend = backend
        self.preparation = preparation
        self.cached = cached
        """Read-only tools' answers kept and identical calls made once (`apimcp.resilience.cache`); None: none."""
        self.notes = notes
        """What an MCP server's progress messages and log entries become on their way to the client."""

    async def call(
        self, ctx: RequestContext, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        """The backend's answer; raises `CredentialRefused` (or a URL elicitation, `InputRequired`) when the call
        needs a credential of the user's that they have not supplied."""
        preparation = self.preparation
        relayed = isinstance(operation.binding, McpBinding)  # an MCP server may ask the client during the call
        if relayed and self.notes is not None and progress is not None:
            progress = _noted(progress, self.notes)
        if preparation is None:
            if relayed:
                return await self.backend.call(operation, arguments, progress, self._relaying(CallExtras(), ctx))
            if self.cached is not None:
                return await self.cached.call(self.backend, operation, arguments, progress, None)
            return await self.backend.call(operation, arguments, progress)
        extras = await preparation.extras(ctx)
        if relayed:
            extras = self._relaying(extras, ctx)
        if self.cached is not None and not relayed:
            result = await self.cached.call(self.backend, operation, arguments, progress, extras)
        else:
            result = await self.backend.call(operation, arguments, progress, extras)
        if preparation.has_user_credentials and isinstance(result, Failure) and result.status == 401:
            again = await preparation.after_rejection(ctx)
            if again is not None:
                again = self._relaying(again, ctx) if relayed else again
                result = await self.backend.call(operation, arguments, progress, again)
        return result

    def _relaying(self, extras: CallExtras, ctx: RequestContext) -> CallExtras:
        """`extras` for an MCP server's call: what it asks the client is relayed to `ctx`'s client (its log entries
        through the plan's guardrails), and a 2026-07-28 server is told what that client can answer."""
        notes = self.notes
        if notes is None:
            return replace(extras, client=CallClient(ctx.request_inputs, ctx.client_capabilities, ctx.log))
        asked = _noted_asks(ctx.request_inputs, notes)
        return replace(extras, client=CallClient(asked, ctx.client_capabilities, _noted_log(ctx, notes)))


def _noted(progress: Progress, notes: Notes) -> Progress:
    async def tell(value: float, total: float | None, message: str | None) -> None:
        await progress(value, total, notes(message) if message is not None else None)

    return tell


def _noted_asks(ask: AskClient, notes: Notes) -> AskClient:
    """`ask` with what an MCP server asks the client (an elicitation's message and form, a sampling request's
    messages and system prompt: text a person or a model reads) through the plan's guardrails first."""

    async def asking(requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        shown: dict[str, InputRequest] = {}
        for key, request in requests.items():
            params = _through(notes, request.params)
            if params is _WITHHELD:
                raise McpError(INVALID_PARAMS, f"the gateway withheld the server's {request.method}: its guardrails "
                               "do not pass on what it holds")  # fmt: skip
            shown[key] = request if params is request.params else InputRequest(method=request.method, params=params)
        return await ask(shown)

    return asking


def _noted_log(ctx: RequestContext, notes: Notes) -> LogToClient:
    async def log(level: LogLevel, data: Any, logger: str | None = None) -> None:
        if ctx.logs(level) and (shown := _through(notes, data)) is not _WITHHELD:
            await ctx.log(level, shown, logger)

    return log


_WITHHELD: Any = object()


def _through(notes: Notes, value: Any) -> Any:
    """`value` (a string, or JSON) as the guardrails let it through: itself, redacted, or `_WITHHELD` (what they
    block, what is too deep to write for their search, and a redaction that ran across the JSON's structure)."""
    try:
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return _WITHHELD
    shown = notes(text)
    if shown is None:
        return _WITHHELD
    if shown == text:
        return value
    try:
        return shown if isinstance(value, str) else orjson.loads(shown)
    except orjson.JSONDecodeError:
        return _WITHHELD
