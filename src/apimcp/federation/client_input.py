"""What an upstream MCP server asks the client during a call (elicitation, sampling, roots), relayed to the client.

The gateway asks through the request's own context (`RequestContext.request_inputs`, given to the backend as
`CallExtras.client`), so each client is asked in its own dialect: a session-era client by a request on its stream,
a 2026-07-28 client by an `input_required` result, whose retry runs the call again (the upstream is then asked
again and given the answer: a tool that asks for input runs up to that point once per round, as 2026-07-28
servers do). A session-era upstream asks by a request on the call's stream and is answered on its session; a
2026-07-28 upstream answers `input_required`, and is called again with the client's responses and its own
`requestState`. The keys an upstream's requests get are stable from one round to the next (a 2026-07-28
upstream's own keys, which its client sees unchanged; for a session-era one, the method and its rank in the
call), so that a client's answer finds its request again.
A client that cannot answer (no such capability, an older revision) makes the upstream receive an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from apimcp.backends.base import AskClient
from apimcp.mcp_client.answers import UpstreamError
from apimcp.protocol.errors import McpError
from apimcp.protocol.models import InputRequest

InputMethod = Literal["elicitation/create", "sampling/createMessage", "roots/list"]
INPUT_METHODS: tuple[InputMethod, ...] = ("elicitation/create", "sampling/createMessage", "roots/list")
MAX_ROUNDS = 8
"""input_required rounds of one call with a 2026-07-28 upstream."""
MAX_REQUESTS = 16
"""Requests in one input_required result, or asked by a session-era server during one call."""


def input_request(method: InputMethod, params: object) -> InputRequest:
    """An upstream's request in the newest wire form (a form elicitation of 2025-06-18 names no mode)."""
    if not isinstance(params, Mapping):
        raise UpstreamError(f"the server's {method} request has no params object")
    newest = dict(params)
    if method == "elicitation/create" and "mode" not in newest:
        newest["mode"] = "url" if "url" in newest else "form"
    return InputRequest(method=method, params=newest)


def method_of(value: object) -> InputMethod | None:
    return next((method for method in INPUT_METHODS if method == value), None)


async def answer(ask: AskClient, key: str, method: InputMethod, params: object) -> dict[str, Any]:
    """The JSON-RPC reply body (`result` or `error`) to an upstream's request, asked of the client under `key`.
    A 2026-07-28 client's `InputRequired` goes through: the call runs again with the client's answer."""
    try:
        answers = await ask({key: input_request(method, params)})
    except McpError as exc:
        return {"error": {"code": exc.code, "message": f"the client cannot answer: {exc.message}"}}
    except UpstreamError as exc:
        return {"error": {"code": -32602, "message": exc.message}}
    return {"result": answers[key]}


async def responses(ask: AskClient, result: Mapping[str, Any]) -> dict[str, Any]:
    """The `inputResponses` for a 2026-07-28 upstream's `input_required` result, asked of the client."""
    requests = result.get("inputRequests")
    if not isinstance(requests, Mapping) or not requests or len(requests) > MAX_REQUESTS:
        raise UpstreamError(f"the server's input_required result holds no readable inputRequests (1 to {MAX_REQUESTS})")
    asked: dict[str, InputRequest] = {}
    for key, request in requests.items():
        method = method_of(request.get("method")) if isinstance(request, Mapping) else None
        if method is None or not isinstance(key, str) or len(key) > 200:
            raise UpstreamError("the server's input_required result asks something that is not a client request")
        asked[key] = input_request(method, request.get("params", {}))
    try:
        answers = await ask(asked)
    except McpError as exc:
        raise UpstreamError(f"the client cannot answer the server's request: {exc.message}") from None
    return {key: answers[key] for key in requests}
