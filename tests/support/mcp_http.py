"""A raw HTTP MCP client for tests that check exact statuses, headers and bodies."""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson

ACCEPT_BOTH = "application/json, text/event-stream"
MODERN = "2026-07-28"
SESSION_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def preflight(url: str, origin: str, request_headers: str = "") -> httpx2.Response:
    """A browser's CORS preflight for a POST from a page of `origin` (with `request_headers` asked for)."""
    headers = {"origin": origin, "access-control-request-method": "POST"}
    if request_headers:
        headers["access-control-request-headers"] = request_headers
    return httpx2.request("OPTIONS", url, headers=headers)


@dataclass
class Reply:
    """What came back for one POST: status, headers and the JSON-RPC messages it carried."""

    status: int
    headers: httpx2.Headers
    messages: list[Any] = field(default_factory=list)
    text: str = ""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    @property
    def body(self) -> Any:
        """The single JSON body, or the final JSON-RPC response of an SSE stream."""
        assert self.messages, f"no JSON-RPC message in the reply (status {self.status}): {self.text!r}"
        responses = [m for m in self.messages if isinstance(m, list) or "result" in m or "error" in m]
        return responses[-1] if responses else self.messages[-1]

    @property
    def result(self) -> Any:
        assert "result" in self.body, f"expected a result, got {self.body}"
        return self.body["result"]

    @property
    def error(self) -> Any:
        assert "error" in self.body, f"expected an error, got {self.body}"
        return self.body["error"]

    def notifications(self, method: str | None = None) -> list[Any]:
        return [
            m
            for m in self.messages
            if isinstance(m, dict) and "method" in m and "id" not in m and (method is None or m["method"] == method)
        ]


def sse_messages(lines: Iterator[str]) -> Iterator[Any]:
    """JSON payloads of the `data:` lines of an SSE stream, event by event."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line == "" and data:
            yield orjson.loads("\n".join(data))
            data = []
    if data:
        yield orjson.loads("\n".join(data))


def first_server_request(lines: Iterator[str]) -> tuple[dict[str, Any], Iterator[Any]]:
    """The first server-to-client request on an SSE stream, and the stream's remaining messages."""
    messages = sse_messages(lines)
    for message in messages:
        if "method" in message and "id" in message:
            return message, messages
    raise AssertionError("no server-to-client request on the stream")


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str | None, Any]]:
    """`(id, JSON payload)` of each event of an SSE stream (id None when the event has none); `retry:` lines
    and comments are skipped."""
    data: list[str] = []
    event_id: str | None = None
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line == "" and data:
            yield event_id, orjson.loads("\n".join(data))
            data, event_id = [], None
    if data:
        yield event_id, orjson.loads("\n".join(data))


@contextmanager
def get_stream(
    url: str, session: Session, last_event_id: str | None = None
) -> Iterator[Iterator[tuple[str | None, Any]]]:
    """The events of a session's GET stream (resumed after `last_event_id`), once the server has seen the
    session's previous GET stream end: until then it answers 409."""
    headers = {"accept": "text/event-stream", **session.headers()}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    with httpx2.Client(timeout=10) as http:
        for _ in range(500):
            with http.stream("GET", url, headers=headers) as response:
                if response.status_code != 409:
                    assert response.status_code == 200, response.read()
                    yield sse_events(response.iter_lines())
                    return
            time.sleep(0.01)
    raise AssertionError("the session's previous GET stream never ended")


def read_reply(response: httpx2.Response) -> Reply:
    reply = Reply(response.status_code, response.headers)
    if "text/event-stream" in reply.content_type:
        reply.messages = list(sse_messages(response.iter_lines()))
    else:
        response.read()
        reply.text = response.text
        if "application/json" in reply.content_type and reply.text:
            reply.messages = [orjson.loads(reply.text)]
    return reply


def b64_header(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


class McpHttp:
    """Sends MCP messages over plain HTTP to one endpoint."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=10)
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> McpHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_id(self) -> int:
        return next(self._ids)

    def post(self, body: Any, headers: Mapping[str, str] | None = None, *, raw: bytes | None = None) -> Reply:
        sent = {"content-type": "application/json", "accept": ACCEPT_BOTH,
                **{name.lower(): value for name, value in (headers or {}).items()}}  # fmt: skip
        content = raw if raw is not None else orjson.dumps(body)
        with self.http.stream("POST", self.url, content=content, headers=sent) as response:
            return read_reply(response)

    def request(self, method: str, params: Any = None, headers: Mapping[str, str] | None = None) -> Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id(), "method": method}
        if params is not None:
            body["params"] = params
        return self.post(body, headers)

    # --- session era -------------------------------------------------------------------------

    def initialize(self, version: str = "2025-11-25", capabilities: Mapping[str, Any] | None = None) -> Session:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": dict(capabilities or {}),
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        assert reply.status == 200, reply
        session_id = reply.headers["mcp-session-id"]
        negotiated = reply.result["protocolVersion"]
        session = Session(self, session_id, negotiated, reply)
        assert session.notify("notifications/initialized").status == 202
        return session

    # --- stateless era -----------------------------------------------------------------------

    def modern(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        capabilities: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        request_id: Any = None,
    ) -> Reply:
        """A well-formed 2026-07-28 request; `headers` override or add mirror headers."""
        body, sent = modern_message(
            method,
            params,
            capabilities=capabilities,
            meta=meta,
            request_id=request_id if request_id is not None else self.next_id(),
        )
        # header names compare without case: an override replaces the header, never sends it twice
        return self.post(body, {**sent, **{name.lower(): value for name, value in (headers or {}).items()}})


def modern_message(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    capabilities: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
    request_id: Any = 1,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and the headers of a well-formed 2026-07-28 request."""
    full: dict[str, Any] = dict(params or {})
    full["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": dict(capabilities or {}),
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
        **(meta or {}),
    }
    headers = {
        "content-type": "application/json",
        "accept": ACCEPT_BOTH,
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    name_param = NAME_PARAM.get(method)
    if name_param and isinstance(full.get(name_param), str):
        headers["mcp-name"] = full[name_param]
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}, headers


@dataclass
class Session:
    client: McpHttp
    id: str
    version: str
    init_reply: Reply

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        sent = {"mcp-session-id": self.id}
        if self.version not in ("2024-11-05", "2025-03-26"):
            sent["mcp-protocol-version"] = self.version
        sent.update(extra or {})
        return sent

    def request(self, method: str, params: Any = None, headers: Mapping[str, str] | None = None) -> Reply:
        return self.client.request(method, params, self.headers(headers))

    def notify(self, method: str, params: Any = None) -> Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        return self.client.post(body, self.headers())

    def post(self, body: Any, headers: Mapping[str, str] | None = None) -> Reply:
        return self.client.post(body, self.headers(headers))
