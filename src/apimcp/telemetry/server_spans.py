"""A SERVER span per MCP request, open while its handler runs, and an INTERNAL one per call a script makes.

`request_started` opens the span (continuing the client's `traceparent` when it sent one) and makes it the
current span of the task that runs the request, so that spans made meanwhile (backend calls) are its children;
`request_finished`, in the same task, closes it with what the request became. The span is named after the
method, and after the method and target once the request did not fail (a target a client made up does not
name spans). A script's tool call gets an INTERNAL span, child of the request's, current in the call's task
while it runs (`call_started`, `call_finished`), with the custom tool that made it. No argument, header or
session id is ever an attribute.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar

from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord, shown_target
from apimcp.telemetry.labels import bounded
from apimcp.telemetry.spans import INTERNAL, Attributes, Span
from apimcp.telemetry.tracing import Tracing

_TARGET_ATTRIBUTE = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}

_Open = tuple[Span, "_Open | None"]
"""The request's span, and the one it interrupted in the same task (none does today; a batch runs one by one)."""
_CURRENT: ContextVar[_Open | None] = ContextVar("apimcp_server_span", default=None)


def current_span() -> Span | None:
    """The SERVER span of the request this task runs (None: no request, or tracing off)."""
    opened = _CURRENT.get()
    return opened[0] if opened is not None else None


class ServerSpans:
    """The spans of one exposition's requests."""

    __slots__ = ("_exposition", "_revision", "_tracing")

    def __init__(self, tracing: Tracing, exposition: str, revision: Callable[[], int]) -> None:
        self._tracing = tracing
        self._exposition = exposition
        self._revision = revision

    def started(self, method: str, target: str | None, source: RequestSource) -> None:
        tracing = self._tracing
        span = tracing.server_span(method, tracing.incoming(source.headers), {})
        if span.recording:  # a span not sampled is never exported: its attributes would be made for nothing
            attributes = span.attributes
            attributes["mcp.method.name"] = method
            attributes["apimcp.exposition"] = self._exposition
            attributes["apimcp.snapshot.revision"] = self._revision()
            if target is not None:
                shown = bounded(shown_target(method, target))
                attributes["apimcp.target"] = shown
                attributes[_TARGET_ATTRIBUTE.get(method, "mcp.resource.uri")] = shown
        _CURRENT.set((span, _CURRENT.get()))  # the engine calls `finished` in the same task

    def finished(self, record: RequestRecord) -> None:
        opened = _CURRENT.get()
        if opened is None:
            return
        span, previous = opened
        _CURRENT.set(previous)
        if not span.recording:
            return
        if _ended(span, record) and record.target is not None:
            shown = span.attributes.get("apimcp.target")  # as `started` bounded it, for the same target
            if not isinstance(shown, str):
                shown = shown_target(record.method, record.target)
            span.name = f"{record.method} {bounded(shown)}"
        span.end()

    def call_started(self, tool: str, via: Mapping[str, str]) -> None:
        """A script's call of `tool` starts, in its own task (none when it is made outside a traced request)."""
        parent = current_span()
        if parent is None:
            return
        attributes: Attributes = {
            "mcp.method.name": "tools/call",
            "apimcp.exposition": self._exposition,
            "apimcp.snapshot.revision": self._revision(),
            "apimcp.target": bounded(tool),
            "gen_ai.tool.name": bounded(tool),
        }
        attributes.update({f"apimcp.via.{key}": bounded(value) for key, value in via.items()})
        span = parent.child(f"tools/call {bounded(tool)}", INTERNAL, attributes)
        _CURRENT.set((span, _CURRENT.get()))

    def call_finished(self, record: RequestRecord) -> None:
        opened = _CURRENT.get()
        if opened is None or opened[0].kind != INTERNAL:  # `call_started` made none
            return
        span, previous = opened
        _CURRENT.set(previous)
        if span.recording:
            _ended(span, record)
            span.end()


def _ended(span: Span, record: RequestRecord) -> bool:
    """What the request or call became, on its span; whether it did not fail as a JSON-RPC error."""
    attributes = span.attributes
    attributes["mcp.protocol.version"] = record.revision
    attributes["apimcp.outcome"] = record.outcome
    if record.outcome == "error":
        if record.error_code is not None:
            attributes["rpc.jsonrpc.error_code"] = record.error_code
        attributes["error.type"] = str(record.error_code) if record.error_code is not None else "error"
        span.fail(f"JSON-RPC error {record.error_code}")
        return False
    if record.outcome == "tool_error":
        attributes["error.type"] = "tool_error"
        span.fail("the tool reported an error")
    return True
