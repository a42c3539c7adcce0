"""JSON-RPC 2.0 framing: classify incoming messages and encode outgoing ones.

Kept free of MCP semantics so that both eras share one strict reading of the
envelope: `jsonrpc` must be "2.0", ids are strings or integers (never null,
booleans or fractions), and `params`, when present, is an object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from apimcp.protocol.errors import INVALID_REQUEST, McpError

RequestId = str | int
JsonObject = dict[str, Any]


@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: JsonObject


@dataclass(slots=True)
class Notification:
    method: str
    params: JsonObject


@dataclass(slots=True)
class Response:
    """A client's answer to a server-to-client request (result or error)."""

    id: RequestId
    result: JsonObject | None
    error: JsonObject | None


Message = Request | Notification | Response


class InvalidMessage(McpError):
    """A JSON value that is not a valid JSON-RPC message; `request_id` is echoed when readable."""

    def __init__(self, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(INVALID_REQUEST, message)
        self.request_id = request_id


def is_valid_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def classify(value: object) -> Message:
    """Read one JSON-RPC message, or raise InvalidMessage naming what is wrong."""
    if not isinstance(value, dict):
        raise InvalidMessage("A JSON-RPC message must be a JSON object")
    raw_id = value.get("id")
    request_id = raw_id if is_valid_id(raw_id) else None
    if value.get("jsonrpc") != "2.0":
        raise InvalidMessage('The "jsonrpc" member must be exactly "2.0"', request_id)
    method = value.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            raise InvalidMessage('The "method" member must be a non-empty string', request_id)
        params = value.get("params")
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise InvalidMessage('The "params" member must be an object', request_id)
        if "id" not in value:
            return Notification(method, params)
        if request_id is None:
            raise InvalidMessage('The "id" member must be a string or an integer')
        return Request(request_id, method, params)
    if "result" in value or "error" in value:
        if request_id is None:
            raise InvalidMessage('A response must carry the "id" of the request it answers')
        result, error = value.get("result"), value.get("error")
        if "result" in value and not isinstance(result, dict):
            raise InvalidMessage('The "result" member must be an object', request_id)
        if "error" in value and not isinstance(error, dict):
            raise InvalidMessage('The "error" member must be an object', request_id)
        return Response(request_id, result, error)
    raise InvalidMessage('A JSON-RPC message needs a "method" (request) or a "result"/"error" (response)')


def result_message(request_id: RequestId, result: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, code: int, message: str, data: Any = None) -> JsonObject:
    error: JsonObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def notification_message(method: str, params: JsonObject | None = None) -> JsonObject:
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def request_message(request_id: RequestId, method: str, params: JsonObject | None) -> JsonObject:
    message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def dumps(message: Any) -> bytes:
    return orjson.dumps(message)


def loads(body: bytes) -> Any:
    """Parse a body; raises orjson.JSONDecodeError (a ValueError) on malformed JSON."""
    return orjson.loads(body)
