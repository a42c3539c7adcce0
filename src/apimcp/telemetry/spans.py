"""Spans as apimcp makes them: small records, cheap to make, handed to a sink when they end.

A span that is not sampled still has ids (so a backend learns the trace, marked not sampled) but records
nothing and is never exported. Attribute values are what apimcp itself sets (strings, integers, booleans,
already bounded by `labels.py`): no validation is spent on them here.
"""

from __future__ import annotations

import random
import time
from typing import Literal, Protocol

from apimcp.telemetry.trace_context import headers_for

Kind = Literal[1, 2, 3]
INTERNAL: Kind = 1
SERVER: Kind = 2
CLIENT: Kind = 3
UNSET, ERROR = 0, 2
AttributeValue = str | int | bool
Attributes = dict[str, AttributeValue]

new_id = random.getrandbits


class SpanSink(Protocol):
    def add(self, span: Span) -> None: ...

    def shutdown(self) -> None: ...


class Span:
    __slots__ = ("_sink", "attributes", "end_ns", "flags", "kind", "name", "parent_id", "span_id", "start_ns",
                 "status_code", "status_message", "trace_id", "tracestate")  # fmt: skip

    def __init__(
        self,
        sink: SpanSink | None,
        name: str,
        kind: Kind,
        trace_id: int,
        parent_id: int,
        flags: int,
        tracestate: str,
        attributes: Attributes,
    ) -> None:
        self._sink = sink
        """None: not sampled."""
        self.name = name
        self.kind = kind
        self.trace_id = trace_id
        self.span_id = new_id(64) or 1
        self.parent_id = parent_id
        """0: a root span."""
        self.flags = flags
        self.tracestate = tracestate
        self.attributes = attributes
        self.status_code = UNSET
        self.status_message = ""
        self.start_ns = time.time_ns()
        self.end_ns = 0

    @property
    def recording(self) -> bool:
        return self._sink is not None

    def fail(self, message: str) -> None:
        self.status_code = ERROR
        self.status_message = message

    def end(self) -> None:
        sink = self._sink
        if sink is not None and not self.end_ns:
            self.end_ns = time.time_ns()
            sink.add(self)

    def child(self, name: str, kind: Kind, attributes: Attributes) -> Span:
        return Span(self._sink, name, kind, self.trace_id, self.span_id, self.flags, self.tracestate, attributes)

    def outgoing(self) -> dict[str, str]:
        """The headers that make this span the parent of what a backend does."""
        return headers_for(self.trace_id, self.span_id, self.flags, self.tracestate)
