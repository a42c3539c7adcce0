"""2026-07-28 (stateless) Streamable HTTP checked on the wire: the ladder, results, MRTR, listen."""

from __future__ import annotations

import threading
import time

import httpx2
import orjson
import pytest

from tests.support.mcp_http import ACCEPT_BOTH, MODERN, McpHttp, b64_header, modern_message, sse_messages

SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def test_discover(mcp: McpHttp) -> None:
    reply = mcp.modern("server/discover")
    assert reply.status == 200 and reply.content_type == "application/json"
    result = reply.result
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert result["capabilities"]["completions"] == {}
    assert result["ttlMs"] == 300000 and result["cacheScope"] == "public"
    assert result["_meta"][SERVER_INFO]["name"] == "showcase"
    assert result["_meta"][SERVER_INFO]["icons"][0]["src"] == "https://example.com/icon.png"
    assert result["instructions"] == "Use the tools to test the engine."
    assert "mcp-session-id" not in reply.headers


@pytest.mark.parametrize(
    ("meta", "missing"),
    [
        (None, "_meta"),
        ({"io.modelcontextprotocol/clientCapabilities": {}}, "protocolVersion"),
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, "clientCapabilities"),
        ({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": []},
         "clientCapabilities"),
    ],
)  # fmt: skip
def test_ladder_1_meta_fields_are_required(mcp: McpHttp, meta: object, missing: str) -> None:
    params = {} if meta is None else {"_meta": meta}
    reply = mcp.post(
        {"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": params},
        {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"},
    )
    assert reply.status == 400
    assert reply.error["code"] == -32602
    assert missing in reply.error["message"]
    assert reply.body["id"] == 101


def test_client_info_is_optional(mcp: McpHttp) -> None:
    params = {
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    }
    reply = mcp.post(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": params},
        {"mcp-protocol-version": MODERN, "mcp-method": "server/discover"},
    )
    assert reply.status == 200


def test_bad_log_level_is_32602(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/list", meta={"io.modelcontextprotocol/logLevel": "verbose"})
    assert reply.status == 400 and reply.error["code"] == -32602


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version"),
        ({"mcp-method": "tools/list"}, "Mcp-Method"),
        ({"mcp-name": "other"}, "Mcp-Name"),
        ({"mcp-name": b64_header("other")}, "Mcp-Name"),
        ({"mcp-name": "=?base64?%%%?="}, "Mcp-Name"),
    ],
)
def test_ladder_2_mirror_headers_must_match(mcp: McpHttp, headers: dict[str, str], named: str) -> None:
    reply = mcp.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers=headers, request_id=7)
    assert reply.status == 400
    assert reply.error["code"] == -32020
    assert named in reply.error["message"]
    assert reply.body["id"] == 7


@pytest.mark.parametrize(
    ("first", "name"),
    [("mcp-method", "tools/list"), ("mcp-name", "link"), ("mcp-protocol-version", "2025-11-25"), ("mcp-param-x", "a")],
)
def test_a_mirror_header_sent_twice_is_refused_whatever_its_last_value(mcp: McpHttp, first: str, name: str) -> None:
    """The finding: the last value won, so `Mcp-Method: tools/list` then `Mcp-Method: tools/call` ran the call while a
    proxy reading the first saw a listing."""
    body, sent = modern_message("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    headers = [(first, name), *sent.items()] if first != "mcp-param-x" else [*sent.items(), (first, "a"), (first, "b")]
    reply = mcp.http.post(mcp.url, content=orjson.dumps(body), headers=headers)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32020
    assert f"The header {first} is sent more than once" in reply.json()["error"]["message"]


def test_ladder_2_missing_mirror_headers(mcp: McpHttp) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    no_name = mcp.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "tools/call"})
    assert no_name.status == 400 and no_name.error["data"] == {"header": "Mcp-Name"}
    no_method = mcp.post(body, {"mcp-protocol-version": MODERN, "mcp-name": "echo"})
    assert no_method.error["data"] == {"header": "Mcp-Method"}
    no_version = mcp.post(body, {"mcp-method": "tools/call", "mcp-name": "echo"})
    assert no_version.error["data"] == {"header": "MCP-Protocol-Version"}


def test_mirror_headers_may_be_base64_encoded(mcp: McpHttp) -> None:
    reply = mcp.modern(
        "tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers={"mcp-name": b64_header("echo")}
    )
    assert reply.status == 200 and reply.result["content"][0]["text"] == "x"


def test_header_mismatch_comes_before_version_check(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "v999.0.0"})
    assert reply.status == 400 and reply.error["code"] == -32020


def test_ladder_3_unsupported_version(mcp: McpHttp) -> None:
    reply = mcp.modern(
        "tools/list",
        meta={"io.modelcontextprotocol/protocolVersion": "v999.0.0"},
        headers={"mcp-protocol-version": "v999.0.0"},
        request_id="x",
    )
    assert reply.status == 400
    assert reply.error["code"] == -32022
    assert reply.error["data"] == {"supported": [MODERN], "requested": "v999.0.0"}
    assert reply.body["id"] == "x"


def test_ladder_3_a_session_version_in_the_envelope_is_unsupported(mcp: McpHttp) -> None:
    reply = mcp.modern(
        "tools/list",
        meta={"io.modelcontextprotocol/protocolVersion": "2025-11-25"},
        headers={"mcp-protocol-version": "2025-11-25"},
    )
    assert reply.status == 400 and reply.error["code"] == -32022


@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"],
)
def test_ladder_4_removed_and_unknown_methods_are_404(mcp: McpHttp, method: str) -> None:
    reply = mcp.modern(method, request_id=44)
    assert reply.status == 404
    assert reply.error["code"] == -32601
    assert reply.body["id"] == 44


def test_ladder_5_missing_client_capability(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/call", {"name": "sample"})
    assert reply.status == 400
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.parametrize(
    ("method", "params", "cached"),
    [
        ("tools/list", {}, True),
        ("prompts/list", {}, True),
        ("resources/list", {}, True),
        ("resources/templates/list", {}, True),
        ("resources/read", {"uri": "test://text"}, True),
        ("tools/call", {"name": "echo", "arguments": {"text": "x"}}, False),
        ("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}, False),
        ("completion/complete",
         {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "b"}}, False),
    ],
)  # fmt: skip
def test_every_result_has_result_type_and_server_info(mcp: McpHttp, method: str, params: dict, cached: bool) -> None:  # type: ignore[type-arg]
    result = mcp.modern(method, params).result
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO]["version"] == "1.2.3"
    assert ("ttlMs" in result) is cached
    assert ("cacheScope" in result) is cached
    if method == "resources/read":
        assert (result["ttlMs"], result["cacheScope"]) == (1000, "private")


def test_resource_not_found_is_32602_with_the_uri(mcp: McpHttp) -> None:
    reply = mcp.modern("resources/read", {"uri": "test://missing"})
    assert reply.status == 400
    assert reply.error["code"] == -32602
    assert reply.error["data"] == {"uri": "test://missing"}


def test_modern_tool_shapes(mcp: McpHttp) -> None:
    tools = {t["name"]: t for t in mcp.modern("tools/list").result["tools"]}
    assert tools["echo"]["icons"][0]["sizes"] == ["48x48"]
    assert tools["echo"]["_meta"] == {"example.com/tag": "demo"}
    assert tools["structured_array"]["outputSchema"] == {"type": "array", "items": {"type": "integer"}}
    result = mcp.modern("tools/call", {"name": "structured_array"}).result
    assert result["structuredContent"] == [1, 2]


def test_progress_and_logs_stream_on_the_request(mcp: McpHttp) -> None:
    reply = mcp.modern(
        "tools/call",
        {"name": "progress"},
        meta={"progressToken": "p1", "io.modelcontextprotocol/logLevel": "info"},
    )
    assert reply.content_type.startswith("text/event-stream")
    assert [n["params"]["progress"] for n in reply.notifications("notifications/progress")] == [0, 50, 100]
    assert reply.result["content"] == [{"type": "text", "text": "done"}]


def test_logs_only_with_a_log_level(mcp: McpHttp) -> None:
    silent = mcp.modern("tools/call", {"name": "logs"})
    assert silent.content_type == "application/json"
    assert silent.notifications() == []
    loud = mcp.modern("tools/call", {"name": "logs"}, meta={"io.modelcontextprotocol/logLevel": "info"})
    assert [m["params"]["level"] for m in loud.notifications("notifications/message")] == ["info", "error"]
    assert loud.notifications("notifications/message")[0]["params"]["logger"] == "showcase"


def test_no_json_rpc_requests_on_stateless_streams(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/call", {"name": "elicit"}, capabilities={"elicitation": {}})
    assert all("id" not in m or "result" in m or "error" in m for m in reply.messages)


def test_input_required_round_trip(mcp: McpHttp) -> None:
    caps = {"elicitation": {}}
    first = mcp.modern("tools/call", {"name": "elicit"}, capabilities=caps).result
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form" and request["params"]["message"] == "Your name?"
    assert isinstance(first["requestState"], str)
    answer = {"action": "accept", "content": {"name": "Ada"}}
    second = mcp.modern(
        "tools/call",
        {"name": "elicit", "inputResponses": {key: answer}, "requestState": first["requestState"]},
        capabilities=caps,
    ).result
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "Hello, Ada!"
    # the same retry again would run the round again (a call a person approved once, made as often as one likes)
    again = mcp.modern(
        "tools/call",
        {"name": "elicit", "inputResponses": {key: answer}, "requestState": first["requestState"]},
        capabilities=caps,
    )
    assert again.status == 400 and again.error["code"] == -32602
    assert again.error["message"] == "Invalid requestState: it was sent already; send the request again without it"


def test_multi_round_carries_earlier_answers_and_handler_state(mcp: McpHttp) -> None:
    caps = {"elicitation": {}}
    r1 = mcp.modern("tools/call", {"name": "elicit_twice"}, capabilities=caps).result
    (k1,) = r1["inputRequests"]
    r2 = mcp.modern(
        "tools/call",
        {"name": "elicit_twice", "inputResponses": {k1: {"action": "accept", "content": {"a": "A"}}},
         "requestState": r1["requestState"]},
        capabilities=caps,
    ).result  # fmt: skip
    assert r2["resultType"] == "input_required"
    (k2,) = r2["inputRequests"]
    assert k2 != k1 and r2["requestState"] != r1["requestState"]
    r3 = mcp.modern(
        "tools/call",
        {"name": "elicit_twice", "inputResponses": {k2: {"action": "accept", "content": {"b": "B"}}},
         "requestState": r2["requestState"]},
        capabilities=caps,
    ).result  # fmt: skip
    assert r3["content"][0]["text"] == "A+B"


def test_several_inputs_are_asked_at_once(mcp: McpHttp) -> None:
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    r1 = mcp.modern("tools/call", {"name": "everything_at_once"}, capabilities=caps).result
    assert {k: v["method"] for k, v in r1["inputRequests"].items()} == {
        "ask": "elicitation/create",
        "llm": "sampling/createMessage",
        "where": "roots/list",
    }
    responses = {
        "ask": {"action": "accept", "content": {"name": "x"}},
        "llm": {"role": "assistant", "content": {"type": "text", "text": "y"}, "model": "m"},
        "where": {"roots": []},
    }
    r2 = mcp.modern(
        "tools/call",
        {"name": "everything_at_once", "inputResponses": responses, "requestState": r1["requestState"]},
        capabilities=caps,
    ).result
    assert r2["content"][0]["text"] == "ask,llm,where"


def test_missing_answer_asks_again(mcp: McpHttp) -> None:
    caps = {"elicitation": {}}
    r1 = mcp.modern("tools/call", {"name": "elicit"}, capabilities=caps).result
    again = mcp.modern(
        "tools/call",
        {
            "name": "elicit",
            "inputResponses": {"something_else": {"action": "accept"}},
            "requestState": r1["requestState"],
        },
        capabilities=caps,
    ).result
    assert again["resultType"] == "input_required"


def test_extra_answers_are_ignored_and_state_is_optional(mcp: McpHttp) -> None:
    caps = {"elicitation": {}}
    r1 = mcp.modern("tools/call", {"name": "elicit"}, capabilities=caps).result
    (key,) = r1["inputRequests"]
    result = mcp.modern(
        "tools/call",
        {"name": "elicit", "inputResponses": {key: {"action": "accept", "content": {"name": "Z"}}, "extra": {}}},
        capabilities=caps,
    ).result
    assert result["content"][0]["text"] == "Hello, Z!"


@pytest.mark.parametrize("responses", [None, 12345, {"elicitation_1": 12345}])
def test_malformed_input_responses_are_32602(mcp: McpHttp, responses: object) -> None:
    reply = mcp.modern("tools/call", {"name": "elicit", "inputResponses": responses}, capabilities={"elicitation": {}})
    assert reply.status == 400 and reply.error["code"] == -32602


def test_tampered_or_foreign_state_is_refused(mcp: McpHttp) -> None:
    caps = {"elicitation": {}}
    r1 = mcp.modern("tools/call", {"name": "elicit"}, capabilities=caps).result
    (key,) = r1["inputRequests"]
    answer = {key: {"action": "accept", "content": {"name": "x"}}}
    tampered = mcp.modern(
        "tools/call",
        {"name": "elicit", "inputResponses": answer, "requestState": r1["requestState"] + "-TAMPERED"},
        capabilities=caps,
    )
    assert tampered.status == 400 and tampered.error["code"] == -32602
    assert "requestState" in tampered.error["message"]
    foreign = mcp.modern(
        "tools/call",
        {"name": "elicit_twice", "inputResponses": answer, "requestState": r1["requestState"]},
        capabilities=caps,
    )
    assert foreign.error["code"] == -32602 and "different request" in foreign.error["message"]


def test_input_required_only_for_declared_capabilities(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/call", {"name": "everything_at_once"}, capabilities={"sampling": {}})
    assert reply.error["code"] == -32021
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_url_elicitation_required_becomes_input_required(mcp: McpHttp) -> None:
    needs_url = mcp.modern("tools/call", {"name": "url_elicitation"}, capabilities={"elicitation": {}})
    assert needs_url.error["code"] == -32021
    result = mcp.modern("tools/call", {"name": "url_elicitation"}, capabilities={"elicitation": {"url": {}}}).result
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "e1": {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "Connect your account", "url": "https://example.com/connect"},
        }
    }


def test_prompts_may_ask_for_input_too_but_lists_may_not(mcp: McpHttp) -> None:
    assert mcp.modern("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}).result["messages"]
    assert mcp.modern("tools/list", capabilities={"elicitation": {}}).result["resultType"] == "complete"


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
def test_get_and_delete_are_405(mcp: McpHttp, verb: str) -> None:
    response = mcp.http.request(verb, mcp.url, headers={"mcp-protocol-version": MODERN, "accept": ACCEPT_BOTH})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_stray_session_id_is_ignored(mcp: McpHttp) -> None:
    reply = mcp.modern("tools/list", headers={"mcp-session-id": "whatever"})
    assert reply.status == 200
    assert "mcp-session-id" not in reply.headers


def test_notifications_get_202(mcp: McpHttp) -> None:
    reply = mcp.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"mcp-protocol-version": MODERN},
    )
    assert reply.status == 202 and reply.text == ""


def test_responses_from_the_client_are_refused(mcp: McpHttp) -> None:
    reply = mcp.post({"jsonrpc": "2.0", "id": 5, "result": {}}, {"mcp-protocol-version": MODERN})
    assert reply.status == 400 and reply.error["code"] == -32600


def test_batches_are_refused(mcp: McpHttp) -> None:
    """The answer says why (it was the session era's: a session id was missing, which 2026-07-28 has none of)."""
    reply = mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], {"mcp-protocol-version": MODERN})
    assert reply.status == 400 and reply.error["code"] == -32600
    assert reply.error["message"] == "JSON-RPC batches are not part of MCP 2026-07-28: send one message per request"


def test_unknown_version_header_without_envelope_gets_a_modern_answer(mcp: McpHttp) -> None:
    reply = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"mcp-protocol-version": "2099-01-01"})
    assert reply.status == 400 and reply.error["code"] == -32602


def test_legacy_initialize_still_works_next_to_modern_traffic(mcp: McpHttp) -> None:
    assert mcp.modern("tools/list").status == 200
    assert mcp.initialize("2025-06-18").version == "2025-06-18"


@pytest.mark.parametrize(
    ("args", "headers", "ok"),
    [
        ({"region": "eu", "count": 3}, {"mcp-param-region": "eu", "mcp-param-count": "3"}, True),
        ({"region": "eu", "count": 3}, {"mcp-param-region": "eu", "mcp-param-count": "3.0"}, True),
        # numerically and exactly: through float, these were equal
        ({"count": 9007199254740993}, {"mcp-param-count": "9007199254740992"}, False),
        ({"count": 9007199254740993}, {"mcp-param-count": "9007199254740993"}, True),
        ({"count": 10}, {"mcp-param-count": "1_0"}, False),
        ({"count": 10}, {"mcp-param-count": "10.0000000000000001"}, False),
        ({"region": "日本"}, {"mcp-param-region": b64_header("日本")}, True),
        ({"query": "q"}, {}, True),
        ({"region": "eu"}, {}, False),
        ({"region": "eu"}, {"mcp-param-region": "us"}, False),
        ({}, {"mcp-param-region": "us"}, False),
        ({"count": 3}, {"mcp-param-count": "4"}, False),
    ],
)
def test_x_mcp_header_params_are_validated(mcp: McpHttp, args: dict, headers: dict, ok: bool) -> None:  # type: ignore[type-arg]
    reply = mcp.modern("tools/call", {"name": "regional", "arguments": args}, headers=headers)
    if ok:
        assert reply.status == 200, reply.body
    else:
        assert reply.status == 400 and reply.error["code"] == -32020


def _listen(url: str, notifications: dict[str, object], request_id: str) -> tuple[httpx2.Client, object]:
    body, headers = modern_message("subscriptions/listen", {"notifications": notifications}, request_id=request_id)
    client = httpx2.Client(timeout=10)
    stream = client.stream("POST", url, content=orjson.dumps(body), headers=headers)
    return client, stream


def test_listen_acknowledges_then_filters_notifications(mcp: McpHttp) -> None:
    """The handler is asked for each subscription, as the session era's resources/subscribe asks it: one it refuses
    (a URI it does not serve) is not acknowledged (the finding: every URI was, and the handler never heard of it, so
    a gateway never subscribed its MCP server)."""
    wanted = {"toolsListChanged": True, "resourceSubscriptions": ["test://text", "secret://not-offered"]}
    client, stream_cm = _listen(mcp.url, wanted, "L1")
    with client, stream_cm as stream:  # type: ignore[attr-defined]
        messages = sse_messages(stream.iter_lines())
        ack = next(messages)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {
            "_meta": {"io.modelcontextprotocol/subscriptionId": "L1"},
            "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://text"]},
        }
        assert mcp.modern("tools/call", {"name": "notify_changes"}).status == 200
        first, second = next(messages), next(messages)
    assert first == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "L1"}},
    }
    assert second["method"] == "notifications/resources/updated"
    assert second["params"]["uri"] == "test://text"


def test_listen_ends_with_a_final_response_on_shutdown() -> None:
    from apimcp.protocol import McpEndpoint
    from tests.protocol.showcase import Showcase
    from tests.support.live_server import live_server

    endpoint = McpEndpoint(Showcase())
    with live_server(endpoint, endpoint.shutdown) as base:
        client, stream_cm = _listen(f"{base}/mcp", {"promptsListChanged": True}, "L2")
        with client, stream_cm as stream:  # type: ignore[attr-defined]
            messages = sse_messages(stream.iter_lines())
            assert next(messages)["method"] == "notifications/subscriptions/acknowledged"
            endpoint.shutdown()
            final = next(messages)
    assert final == {
        "jsonrpc": "2.0",
        "id": "L2",
        "result": {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "L2"}},
    }


def test_closing_the_stream_cancels_the_request(mcp: McpHttp, showcase: object) -> None:
    before = len(showcase.cancelled)  # type: ignore[attr-defined]
    body, headers = modern_message("tools/call", {"name": "slow"}, meta={"progressToken": 1}, request_id="slow-modern")
    with (
        httpx2.Client(timeout=10) as client,
        client.stream("POST", mcp.url, content=orjson.dumps(body), headers=headers) as stream,
    ):
        assert next(sse_messages(stream.iter_lines()))["method"] == "notifications/progress"
    deadline = time.monotonic() + 5
    while len(showcase.cancelled) == before and time.monotonic() < deadline:  # type: ignore[attr-defined]
        threading.Event().wait(0.02)
    assert showcase.cancelled[before:] == ["slow-modern"]  # type: ignore[attr-defined]
