"""Random traffic against a gateway's MCP endpoint, in both eras, for a bounded number of requests.

A live gateway (uvicorn on loopback) serves the echo API with artifacts (prompts, resources read
from the backend, a declarative and a scripted custom tool, filters); its backend is the test echo
server, so every tool call that gets through reaches a real backend on loopback. Hypothesis sends well-formed
and malformed requests alike: bodies that are not JSON, JSON-RPC envelopes with every kind of wrong
member, known and unknown methods, tool calls with random arguments and with arguments generated
from each tool's input schema, stray or wrong headers, other HTTP methods, sessions real and made
up. Whatever comes in, the gateway must answer without a 5xx, without an internal error (-32603
means a handler raised something unexpected) and without logging an error or a traceback.

`APIMCP_FUZZ_EXAMPLES` raises the number of requests per test, and `APIMCP_FUZZ_RANDOM=1` draws new
ones instead of CI's fixed sequence, for a longer run by hand.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.error_records import ErrorRecords
from tests.fuzz.strategies import conforming, deep, values, wide_integers_kept
from tests.gateway.conftest import echo_config, gateway_for
from tests.support.live_server import live_app
from tests.support.mcp_http import (
    ACCEPT_BOTH,
    MODERN,
    SESSION_VERSIONS,
    McpHttp,
    b64_header,
    read_reply,
    sse_messages,
)

EXAMPLES = int(os.environ.get("APIMCP_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # The same requests in every CI run; APIMCP_FUZZ_RANDOM=1 explores new ones (with more examples).
    derandomize=not os.environ.get("APIMCP_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
METHODS = (
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/read", "resources/templates/list", "resources/subscribe", "logging/setLevel",
    "completion/complete", "server/discover", "subscriptions/listen", "notifications/initialized",
    "notifications/cancelled", "tasks/get", *["tools/call"] * 6,
)  # fmt: skip


ARTIFACTS = Path(__file__).with_name("artifacts")
CONFIG = (
    echo_config("{backend}").rstrip()
    + "\n    artifacts: ["
    + ", ".join(
        str(ARTIFACTS / name) for name in ("prompts.yaml", "resources.yaml", "custom-tools.yaml", "filters.yaml")
    )
    + "]\n"
)


class Target:
    """The live echo exposition, its tools, prompts and resources, and sessions opened on it in every session
    revision."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=10)
        with McpHttp(url) as client:
            self.sessions = [client.initialize(version).id for version in SESSION_VERSIONS]
            self.tools = {tool["name"]: tool for tool in client.modern("tools/list").result["tools"]}
            self.prompts = [p["name"] for p in client.modern("prompts/list").result["prompts"]]
            self.uris = [r["uri"] for r in client.modern("resources/list").result["resources"]]

    def send(self, method: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any]:
        """One request; the status and the JSON-RPC messages of its answer. Of a stream that stays open
        (a GET stream, subscriptions/listen) only the first event is read."""
        with self.http.stream(method, self.url, content=body, headers=headers) as response:
            if method == "GET" and response.status_code == 200:
                return 200, []  # an open GET stream: a good answer, nothing more to read
            if b"subscriptions/listen" in (body or b"") and "event-stream" in response.headers.get("content-type", ""):
                return response.status_code, [next(sse_messages(response.iter_lines()))]
            reply = read_reply(response)
        if reply.content_type.startswith("application/json") and reply.status >= 400 and not reply.messages:
            raise AssertionError(f"an error status {reply.status} came with an empty JSON body")
        return reply.status, reply.messages


@pytest.fixture(scope="module")
def target(errors: ErrorRecords) -> Iterator[Target]:
    with live_app(lambda: gateway_for(CONFIG)) as base:
        served = Target(f"{base}/mcp/echo")
        yield served
        served.http.close()


def check(status: int, messages: list[Any], errors: ErrorRecords) -> None:
    logged, errors.records = errors.records, []  # this request's records only, whatever happens below
    assert not logged, [errors.format(r) for r in logged]
    assert status < 500, f"HTTP {status}: {messages}"
    for message in messages:
        for item in message if isinstance(message, list) else [message]:
            assert isinstance(item, dict) and item.get("jsonrpc") == "2.0", f"not a JSON-RPC message: {item!r}"
            error = item.get("error")
            if error is not None:
                assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), item
                assert error["code"] != -32603, f"an internal error: {item}"


# --- what a request is made of ------------------------------------------------------------------

ids = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=12),
    st.none(),
    st.booleans(),
    st.floats(),
    st.just({"a": 1}),
    st.just(orjson.Fragment(b"99999999999999999999999")),
)
header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40).map(str.strip)


@st.composite
def envelopes(draw: st.DrawFn, method: str, params: Any) -> Any:
    """A JSON-RPC request, usually right, sometimes wrong in one member."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(st.integers(1, 10**6)), "method": method}
    if params is not None:
        message["params"] = params
    flaw = draw(st.sampled_from(["none"] * 6 + ["jsonrpc", "id", "no-id", "params", "method"]))
    if flaw == "jsonrpc":
        message["jsonrpc"] = draw(st.sampled_from(["1.0", 2, None, ""]))
    elif flaw == "id":
        message["id"] = draw(ids)
    elif flaw == "no-id":
        del message["id"]
    elif flaw == "params":
        message["params"] = draw(values | deep)
    elif flaw == "method":
        message["method"] = draw(st.one_of(st.text(max_size=20), st.integers(-(2**63), 2**63 - 1), st.none()))
    return message


@st.composite
def tool_params(draw: st.DrawFn, tools: dict[str, Any]) -> dict[str, Any]:
    """tools/call params: a real tool with arguments from its schema, random ones, or deep ones."""
    name = draw(st.sampled_from(sorted(tools)) | st.text(max_size=20))
    tool = tools.get(name)
    kind = draw(st.sampled_from(["schema", "schema", "random", "deep"]))
    if kind == "schema" and tool is not None:
        schema = tool["inputSchema"]
        arguments = wide_integers_kept(draw(conforming(schema, schema.get("$defs", {}))))
    elif kind == "deep":
        arguments = {"itemId": "1", "x": draw(deep)}
    else:
        arguments = draw(st.dictionaries(st.text(max_size=10), values, max_size=5))
    return {"name": name, "arguments": arguments}


@st.composite
def params_for(draw: st.DrawFn, method: str, target: Target) -> Any:
    if method == "tools/call":
        return draw(tool_params(target.tools))
    if method == "prompts/get":
        arguments = st.dictionaries(st.sampled_from(["itemId", "tone"]) | st.text(max_size=5), values, max_size=3)
        return {"name": draw(st.sampled_from(target.prompts) | st.text(max_size=10)), "arguments": draw(arguments)}
    if method in ("resources/read", "resources/subscribe"):
        # Known URIs, template matches with hostile variables (dot segments, encodings, long values), noise.
        variable = st.text(max_size=40) | st.sampled_from(["..", "%2e%2E", "a/../..", "a?b#c", "{x}", "x" * 3000])
        uri = (
            st.sampled_from(target.uris)
            | variable.map(lambda v: f"file:///items/{v}")
            | st.tuples(variable, variable).map(lambda v: f"note://echo/{v[0]}/{v[1]}")
            | st.text(max_size=30)
        )
        return {"name": draw(st.text(max_size=10)), "uri": draw(uri)}
    if method == "completion/complete":
        refs = [{"type": "ref/prompt", "name": name} for name in target.prompts]
        refs.append({"type": "ref/resource", "uri": "file:///items/{itemId}{?verbose}"})
        ref = st.sampled_from(refs) | st.dictionaries(st.sampled_from(["type", "name", "uri"]), values, max_size=3)
        argument = {"name": draw(st.sampled_from(["itemId", "tone"]) | st.text(max_size=5)), "value": draw(values)}
        return {"ref": draw(ref), "argument": argument}
    if method == "logging/setLevel":
        return {"level": draw(st.sampled_from(["debug", "info", "bogus"]))}
    if method == "initialize":
        return {
            "protocolVersion": draw(st.sampled_from([*SESSION_VERSIONS, MODERN, "1999-01-01"]) | st.text(max_size=12)),
            "capabilities": draw(st.dictionaries(st.text(max_size=8), values, max_size=3)),
            "clientInfo": {"name": "fuzz", "version": "0"},
        }
    return draw(st.none() | st.dictionaries(st.text(max_size=8), values, max_size=3))


def mangled(draw: st.DrawFn, headers: dict[str, str]) -> dict[str, str]:
    """Headers with, sometimes, one of them changed, dropped or added."""
    change = draw(st.sampled_from(["none"] * 4 + ["drop", "garble", "base64", "param", "accept", "content"]))
    if change == "drop" and headers:
        headers.pop(draw(st.sampled_from(sorted(headers))))
    elif change == "garble" and headers:
        headers[draw(st.sampled_from(sorted(headers)))] = draw(header_text)
    elif change == "base64":
        headers["mcp-name"] = draw(st.sampled_from([b64_header(draw(st.text(max_size=10))), "=?base64?%%%?="]))
    elif change == "param":
        headers["mcp-param-" + draw(st.sampled_from(["x", "itemid", "X-Trace"]))] = draw(header_text)
    elif change == "accept":
        headers["accept"] = draw(st.sampled_from(["text/plain", "application/json", "text/event-stream", "*/*", ""]))
    elif change == "content":
        headers["content-type"] = draw(st.sampled_from(["text/plain", "application/json; charset=utf-8", ""]))
    return headers


# --- the tests ----------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_random_session_era_traffic_gets_no_server_error(target: Target, errors: ErrorRecords, data: Any) -> None:
    draw = data.draw
    method = draw(st.sampled_from(METHODS))
    session = draw(st.sampled_from(target.sessions) | st.text(min_size=1, max_size=50, alphabet="abcXYZ-_0123"))
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, "mcp-session-id": session}
    version = draw(st.sampled_from([None, *SESSION_VERSIONS, MODERN, "bogus"]))
    if version is not None:
        headers["mcp-protocol-version"] = version
    headers = mangled(draw, headers)
    shape = draw(st.sampled_from(["message"] * 6 + ["batch", "garbage", "json", "verb"]))
    verb = "POST"
    body: bytes | None
    if shape == "batch":
        body = orjson.dumps(draw(st.lists(envelopes(method, draw(params_for(method, target))), max_size=5)))
    elif shape == "garbage":
        body = draw(st.binary(max_size=200))
    elif shape == "json":
        body = orjson.dumps(draw(values))
    elif shape == "verb":
        verb, body = draw(st.sampled_from(["GET", "DELETE", "PUT", "OPTIONS", "PATCH"])), None
    else:
        body = orjson.dumps(draw(envelopes(method, draw(params_for(method, target)))))
    check(*target.send(verb, body, headers), errors)


@FUZZ
@given(data=st.data())
def test_random_stateless_traffic_gets_no_server_error(target: Target, errors: ErrorRecords, data: Any) -> None:
    draw = data.draw
    method = draw(st.sampled_from(METHODS))
    params = draw(params_for(method, target))
    params = dict(params) if isinstance(params, dict) else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": draw(st.sampled_from([MODERN] * 5 + ["2025-11-25", "bogus"])),
        "io.modelcontextprotocol/clientCapabilities": draw(st.just({}) | st.dictionaries(st.text(max_size=5), values)),
    }
    if draw(st.booleans()):
        meta["io.modelcontextprotocol/logLevel"] = draw(st.sampled_from(["debug", "error", "loud"]))
    if draw(st.integers(0, 9)) == 0:
        params["_meta"] = draw(values)
    else:
        params["_meta"] = meta
    if method == "tools/call" and draw(st.integers(0, 4)) == 0:
        params["requestState"] = draw(st.text(max_size=60))
        params["inputResponses"] = draw(values)
    headers = {
        "content-type": "application/json",
        "accept": ACCEPT_BOTH,
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    name = params.get("name", params.get("uri"))
    if isinstance(name, str):
        plain = name.isascii() and name.isprintable() and name == name.strip()
        headers["mcp-name"] = name if plain else b64_header(name)
    headers = mangled(draw, headers)
    message = draw(envelopes(method, params))
    check(*target.send("POST", orjson.dumps(message), headers), errors)
