"""What the engine tells an observer about each request it answered: the seam for audit trails and telemetry.

A handler that sets `observer` hears of every JSON-RPC request twice: `request_started` before the handler runs,
in the task that runs it (a tracer opens its span there, so that what the handler does is inside it), and
`request_finished` once it is answered, in the same task: its method and target, how it ended, how long it took,
and who sent it. A handler without one costs the engine a single attribute read per request. Observers must not
block: they are called on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from apimcp.protocol.caller import RequestSource
from apimcp.protocol.errors import HttpRefusal
from apimcp.protocol.jsonrpc import JsonObject, RequestId

Outcome = Literal["success", "error", "tool_error", "input_required", "cancelled", "refused"]
"""`error`: a JSON-RPC error; `tool_error`: a tool result with isError; `input_required`: a 2026-07-28
round that asks the client for input; `cancelled`: the client cancelled it or went away; `refused`: the HTTP
response itself refused it (a token lacking a tool's scope: 403), or a rate limit refused a script's call (429,
as at the door), see `RequestRecord.status`."""

_TARGET_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                 "resources/subscribe": "uri", "resources/unsubscribe": "uri"}  # fmt: skip


@dataclass(slots=True)  # not frozen: made on every observed request, and a frozen dataclass is ~6x slower to make
class RequestRecord:
    method: str
    target: str | None
    """The tool or prompt name, or the resource URI, the request names."""
    request_id: RequestId
    session_id: str | None
    revision: str
    outcome: Outcome
    error_code: int | None
    duration_ms: float
    source: RequestSource
    status: int | None = None
    """The HTTP status of a `refused` request: what the client got, rather than the JSON-RPC error in its body."""
    reason: str | None = None
    """Why it was refused, as the refusal names it (`insufficient_scope`, `caller_rate_limit`)."""
    retry_after: int | None = None
    """The seconds after which a request refused 429 may be tried again."""


class RequestObserver(Protocol):
    def request_started(self, method: str, target: str | None, source: RequestSource) -> None:
        """A request is about to run (each call is followed by one `request_finished`, in the same task)."""

    def request_finished(self, record: RequestRecord) -> None: ...


def target_of(method: str, params: JsonObject) -> str | None:
    name = _TARGET_PARAM.get(method)
    value = params.get(name) if name is not None else None
    return value if isinstance(value, str) else None


def without_query(uri: str) -> str:
    """A URI without its query, its fragment or the user information of its authority (`user:password@`): where
    a client or a server may have put a credential."""
    for mark in ("?", "#"):
        uri = uri.split(mark, 1)[0]
    scheme, slashes, rest = uri.partition("://")
    if not slashes:
        return uri
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}" if "@" in authority else uri


def shown_target(method: str, target: str) -> str:
    """What observers (spans, the audit trail) may show of a request's target: a resource's URI without its query
    or fragment; a tool's or a prompt's name as it is."""
    return without_query(target) if method.startswith("resources/") else target


def outcome_of(message: JsonObject | None, refused: HttpRefusal | None = None) -> tuple[Outcome, int | None]:
    """How a JSON-RPC response message ended (None: no response was sent, the request was cancelled), or how a
    refusal the HTTP response carried did (`refused`: no JSON-RPC code, the status says it)."""
    if refused is not None:
        return "refused", None
    if message is None:
        return "cancelled", None
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        return "error", code if isinstance(code, int) else None
    result = message.get("result")
    if isinstance(result, dict):
        if result.get("isError") is True:
            return "tool_error", None
        if result.get("resultType") == "input_required":
            return "input_required", None
    return "success", None
