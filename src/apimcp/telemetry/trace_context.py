"""W3C Trace Context (`traceparent`, `tracestate`): what a client or a backend call carries of a trace.

Parsed by hand, bounded: a header that is not exactly the version-00 form (or a later version's prefix) is
ignored, as the recommendation says, and the request starts a trace of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from apimcp.forwarding.policy import MAX_TRACESTATE  # one bound for what is passed on and what is traced

Headers = Sequence[tuple[bytes, bytes]]
_HEX = frozenset("0123456789abcdef")
_TRACESTATE_CHARS = frozenset("\t" + "".join(map(chr, range(0x20, 0x7F))))
"""What a `tracestate` is made of (list members are printable ASCII, separated by commas and optional white
space): anything else drops the header, which would otherwise reach backends and the collector (OTLP strings
are UTF-8; a byte a client sent must not make a whole batch undecodable)."""
SAMPLED = 0x01


@dataclass(frozen=True, slots=True)
class SpanContext:
    trace_id: int
    span_id: int
    flags: int
    tracestate: str = ""

    @property
    def sampled(self) -> bool:
        return bool(self.flags & SAMPLED)


def _hex(text: str, length: int) -> int | None:
    if len(text) != length or not _HEX.issuperset(text):
        return None
    value = int(text, 16)
    return value or None  # all zeros is invalid


def parse_traceparent(value: str, tracestate: str = "") -> SpanContext | None:
    parts = value.strip().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or not _HEX.issuperset(parts[0]) or parts[0] == "ff":
        return None
    if parts[0] == "00" and len(parts) != 4:
        return None
    trace_id, span_id = _hex(parts[1], 32), _hex(parts[2], 16)
    if trace_id is None or span_id is None or len(parts[3]) != 2 or not _HEX.issuperset(parts[3]):
        return None
    state = tracestate.strip()
    if len(state) > MAX_TRACESTATE or not _TRACESTATE_CHARS.issuperset(state):
        state = ""
    return SpanContext(trace_id, span_id, int(parts[3], 16) & SAMPLED, state)


def incoming(headers: Headers) -> SpanContext | None:
    """The trace context an ASGI request's headers carry (None: the request starts a trace)."""
    parent: bytes | None = None
    state: list[bytes] = []
    for name, value in headers:
        if name == b"traceparent":
            if parent is not None:
                return None  # two: neither is trusted
            parent = value
        elif name == b"tracestate":
            state.append(value)
    if parent is None:
        return None
    return parse_traceparent(parent.decode("latin-1"), b",".join(state).decode("latin-1"))


def headers_for(trace_id: int, span_id: int, flags: int, tracestate: str) -> dict[str, str]:
    """The headers that make span `span_id` of `trace_id` the parent of what a backend does."""
    # to_bytes().hex() writes the same lower-case, zero-padded hex as `:032x`, in less than half the time
    headers = {"traceparent": f"00-{trace_id.to_bytes(16, 'big').hex()}-{span_id.to_bytes(8, 'big').hex()}-{flags:02x}"}
    if tracestate:
        headers["tracestate"] = tracestate
    return headers
