"""A large backend answer becomes a tool result without its value ever being built on the event loop.

A backend gives a JSON answer of `APIMCP_SHAPING_LARGE_FROM_BYTES` and more back unparsed (`UnparsedJson`).
Its bytes go to a shaping process (`apimcp.shaping`), which does there what the gateway would have done on
the loop: read it as its backend would have (`UnparsedJson.read`: the value and compact text of a REST
answer, a GraphQL answer's data and errors), check the value against the tool's output schema (its validator
compiled once per process, known by the schema's digest), and serialize it as the wire carries it. What comes
back is bytes: the structured content travels on as `RawJson`, written into the response unparsed, and the
result is exactly the one the loop would have made (the same text, structured content, and error results).
Bytes the process found unchanged (a compact answer is its own serialization) are not sent back.

A job the shaping processes cannot run (too many waiting, too slow, a process that died) is an error result
that says so: the answer cannot be passed on unchecked, its bytes could be anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from apimcp.backends.base import Failure, JsonBody, TextBody, UnparsedJson, unpassable
from apimcp.gateway.results import error_result, json_result, tool_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import CallToolResult, RawJson
from apimcp.shaping.names import name_of, named
from apimcp.shaping.pool import Shaper, ShapingUnavailable

_INPUT: Final = -1
_STRUCTURED: Final = -2
"""Where the reply's bytes are when not among its blobs: the answer sent, or the structured content."""


async def large_answer_result(answer: UnparsedJson, output: ArgumentValidator | None, shaper: Shaper) -> CallToolResult:
    """The tool result of `answer`, checked against `output` when the tool has an output schema."""
    args: dict[str, Any] = {"read": name_of(answer.read), "status": answer.status, "media_type": answer.media_type}
    blobs = [answer.data]
    if output is not None:
        args["schema"], schema = output.serialized
        blobs.append(schema)
    try:
        done = await shaper.run(read_answer, args, blobs)
    except ShapingUnavailable as exc:
        return error_result(str(exc))
    reply, sent = done.reply, done.blobs

    def located(where: int, structured: bytes = b"") -> bytes:
        return answer.data if where == _INPUT else structured if where == _STRUCTURED else sent[where]

    if reply["kind"] == "failure":
        return tool_result(Failure(reply["message"], reply["status"]), output)
    if reply["kind"] == "text":
        text = located(reply["text"]).decode("utf-8", "replace")
        return tool_result(TextBody(text, reply["media_type"], reply["status"], reply["unread"]), output)
    structured = located(reply["structured"])
    text = located(reply["text"], structured).decode()
    body = JsonBody(RawJson(data=structured), text, reply["status"], tuple(reply["notes"]))
    return json_result(body, reply["problems"])


# --- in a shaping process ------------------------------------------------------------------------

_validators: dict[str, ArgumentValidator] = {}
MAX_VALIDATORS: Final = 256


def read_answer(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    """The job: `blobs` are the answer and, with a `schema` digest, the output schema's JSON."""
    data = blobs[0]
    read: Callable[[bytes, int, str], JsonBody | TextBody | Failure] = named(args["read"])
    result = read(data, args["status"], args["media_type"])
    out: list[bytes] = []

    def place(value: bytes, *known: tuple[bytes, int]) -> int:
        for same, where in known:
            if value == same:
                return where
        out.append(value)
        return len(out) - 1

    if isinstance(result, Failure):
        return {"kind": "failure", "message": result.message, "status": result.status}, out
    if isinstance(result, TextBody):
        text = result.text.encode()
        where = _INPUT if result.text == data.decode("utf-8", "replace") else place(text)
        reply = {"kind": "text", "text": where, "media_type": result.media_type, "status": result.status}
        return {**reply, "unread": result.unread}, out
    try:
        structured = orjson.dumps(result.value)
    except orjson.JSONEncodeError as exc:
        failure = unpassable(exc)
        return {"kind": "failure", "message": failure.message, "status": failure.status}, out
    problems = _validator(args["schema"], blobs[1]).problems(result.value, quoting=False) if "schema" in args else []
    return {
        "kind": "json",
        "structured": place(structured, (data, _INPUT)),
        "text": place(result.text.encode(), (data, _INPUT), (structured, _STRUCTURED)),
        "status": result.status,
        "notes": list(result.notes),
        "problems": problems,
    }, out


def _validator(digest: str, schema: bytes) -> ArgumentValidator:
    validator = _validators.get(digest)
    if validator is None:
        if len(_validators) >= MAX_VALIDATORS:
            _validators.clear()
        validator = _validators[digest] = ArgumentValidator(orjson.loads(schema))
    return validator
