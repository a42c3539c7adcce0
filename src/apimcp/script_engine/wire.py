"""The conversation between the gateway and a script process, over `apimcp.shaping.frames`.

One run at a time: the gateway sends `run` (limits in the header; source, input and the host's fallback
answer as blobs), the child sends `call` frames (a host function's name, its argument text) and waits for
each `answer`, until it sends `done` (how the evaluation ended, and the text that goes with it). Texts travel
as blobs of UTF-8 that may hold lone surrogates (JavaScript strings can), never inside the JSON header.
An interrupt goes over a control pipe of its own: the run's number, 8 bytes.
"""

from __future__ import annotations

from typing import Final

RUN: Final = "run"
CALL: Final = "call"
ANSWER: Final = "answer"
DONE: Final = "done"

ENDED: Final = "ended"  # the prelude's answer (a string)
ODD: Final = "odd"  # the evaluation gave something else than a string
STACK: Final = "stack"  # the engine's stack overflow
UNCAUGHT: Final = "uncaught"  # an exception the prelude could not catch (the interrupt, memory)

RUN_NUMBER_BYTES: Final = 8

HOST_FUNCTIONS: Final = {
    "script": ("ready", "call", "start", "await", "fail"),
    "program": ("ready", "start", "next"),
}
"""The host functions a run of each kind (`Script.kind`, the `run` frame's `kind`) exposes, by the names
`Host.functions` gives them."""


def blob(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")
