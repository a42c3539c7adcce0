"""The control plane and its gateway in one process: what the REST API changes, MCP clients see at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.control.factories import prompts
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.gateway.echo_backend import digest
from tests.support.mcp_http import McpHttp, Session, get_stream, sse_messages


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        yield running


def _tools(url: str, **headers: str) -> set[str]:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list", headers=headers)
        assert reply.status == 200, reply
        return {tool["name"] for tool in reply.result["tools"]}


def test_every_endpoint_form_reaches_the_exposition(live: Deployment) -> None:
    service = live.api.import_echo()
    _, exposition = live.api.expose(service["id"], live.backend, "echo", include=["get_item", "secured"])
    assert exposition["endpoints"] == ["/mcp/default/echo", f"/mcp/{exposition['id']}", "/mcp/default/echo/2.1"]
    wait_until(lambda: live.served("/mcp/default/echo"))

    for path in exposition["endpoints"]:
        assert _tools(live.base + path) == {"get_item", "secured"}
    by_service = httpx2.post(f"{live.base}/mcp/default/echo/2.1", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert by_service.headers["link"] == '</mcp/default/echo>; rel="canonical"'
    canonical = httpx2.post(f"{live.base}/mcp/default/echo", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert "link" not in canonical.headers

    for missing in ("/mcp/default/nope", "/mcp/other/echo", "/mcp/default/echo/9.9", "/mcp/a/b/c/d", "/mcp/x"):
        answer = httpx2.post(live.base + missing, json={})
        assert answer.status_code == 404
        assert answer.json() == {"error": f"No exposition at {missing}"}


def test_the_newest_exposition_of_a_service_answers_its_coordinates(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, first = live.api.expose(service["id"], live.backend, "first", include=["get_item"])
    second = live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "second"})
    wait_until(lambda: live.served("/mcp/default/second"))
    answer = httpx2.post(f"{live.base}/mcp/default/echo/2.1", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.headers["link"] == '</mcp/default/second>; rel="canonical"'
    live.api.call("DELETE", f"/expositions/{second['id']}", 204)
    wait_until(lambda: not live.served("/mcp/default/second"))
    answer = httpx2.post(f"{live.base}/mcp/default/echo/2.1", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.headers["link"] == f'</mcp/default/{first["name"]}>; rel="canonical"'


def _listener(url: str, session: Session, heard: list[Any], count: int) -> threading.Thread:
    """A GET stream of `session`, open when this returns, that keeps the first `count` messages it hears."""
    listening = threading.Event()

    def listen() -> None:
        headers = {"accept": "text/event-stream", **session.headers()}
        with httpx2.Client(timeout=10) as client, client.stream("GET", url, headers=headers) as stream:
            listening.set()
            for message in sse_messages(stream.iter_lines()):
                heard.append(message)
                if len(heard) == count:
                    return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert listening.wait(5)
    return thread


def test_a_plan_change_reaches_open_sessions_and_their_streams(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", include=["get_item"])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))
    heard: list[Any] = []
    with McpHttp(url) as mcp:
        session = mcp.initialize("2025-06-18")
        assert {t["name"] for t in session.request("tools/list").result["tools"]} == {"get_item"}
        listener = _listener(url, session, heard, 1)
        live.api.call("PATCH", f"/plans/{plan['id']}", json={"include": ["get_item", "delete_item"]})
        listener.join(timeout=15)  # it ends once it heard one (a guard against hanging, not a latency)
        assert heard == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
        tools = session.request("tools/list").result["tools"]  # the same session, still valid
        assert {t["name"] for t in tools} == {"get_item", "delete_item"}


def _events(
    url: str, session: Session, heard: list[tuple[str | None, Any]], count: int, resume: str | None = None
) -> threading.Thread:
    """A GET stream of `session` (resumed after the event `resume`, if given), open when this returns, that keeps
    the first `count` events it hears as (event id, message)."""
    listening = threading.Event()

    def listen() -> None:
        with get_stream(url, session, resume) as events:
            listening.set()
            for event in events:
                heard.append(event)
                if len(heard) == count:
                    return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    assert listening.wait(10)
    return thread


def test_a_plan_change_made_while_no_get_stream_is_open_reaches_the_resumed_stream(live: Deployment) -> None:
    """Issue 21 (Medium): a GET stream's events were lost while no stream was open. The plan changed while a session
    had no GET stream, the stream it resumed with `Last-Event-ID` replayed nothing (the change was never an event
    of it), and the client kept a stale tool list for ever. A real plan change, through the REST API."""
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", include=["get_item"])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))

    def open_streams() -> int | None:
        return live.app.gateway.runtime.figures().open_streams.get("default/echo")

    with McpHttp(url) as mcp:
        session = mcp.initialize("2025-11-25")
        assert {t["name"] for t in session.request("tools/list").result["tools"]} == {"get_item"}
        first: list[tuple[str | None, Any]] = []
        listener = _events(url, session, first, 1)
        live.api.call("PATCH", f"/plans/{plan['id']}", json={"include": ["get_item", "delete_item"]})
        listener.join(timeout=15)  # it ends once it heard one (a guard against hanging, not a latency)
        [(last_seen, message)] = first  # the stream's only event, so a replay after it has nothing to give
        assert message["method"] == "notifications/tools/list_changed"
        assert last_seen is not None
        # the stream has ended, on the gateway too: what follows can reach no stream, only the session's backlog
        wait_until(lambda: open_streams() == 0)

        live.api.call("PATCH", f"/plans/{plan['id']}", json={"include": ["get_item", "delete_item", "replace_item"]})
        wait_until(lambda: _tools(url) == {"get_item", "delete_item", "replace_item"})  # served, to other clients

        resumed: list[tuple[str | None, Any]] = []
        _events(url, session, resumed, 1, resume=last_seen).join(timeout=15)  # a guard, as above
        assert [message["method"] for _, message in resumed] == ["notifications/tools/list_changed"]
        assert resumed[0][0] is not None  # resumable in turn
        tools = session.request("tools/list").result["tools"]  # what the client asks for once told
        assert {t["name"] for t in tools} == {"get_item", "delete_item", "replace_item"}


def test_an_attached_prompts_file_reaches_open_sessions_and_their_streams(live: Deployment) -> None:
    service = live.api.import_echo()
    live.api.expose(service["id"], live.backend, "echo", include=["get_item"])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))
    heard: list[Any] = []
    with McpHttp(url) as mcp:
        session = mcp.initialize("2025-06-18")
        assert session.request("prompts/list").error["code"] == -32601  # nothing attached yet
        listener = _listener(url, session, heard, 3)
        files = {"file": ("greetings.yaml", prompts("echo", "2.1", "greet"), "application/yaml")}
        live.api.call("POST", f"/services/{service['id']}/artifacts", 201, files=files)
        wait_until(lambda: len(heard) >= 2)
        listener.join(timeout=0.5)  # time for a third, which should not come (a busy machine only leaves less)
        # tools may have changed too (a file may be custom tools); nothing is said of resources, never offered
        methods = sorted(m["method"] for m in heard)
        assert methods == ["notifications/prompts/list_changed", "notifications/tools/list_changed"]
        assert [p["name"] for p in session.request("prompts/list").result["prompts"]] == ["greet"]


def test_inbound_api_keys_guard_the_endpoint(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", include=["get_item"], inbound_mode="api_key")
    key = plan["api_key"]
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))
    refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert _tools(url, authorization=f"Bearer {key}") == {"get_item"}
    assert _tools(url, **{"x-api-key": key}) == {"get_item"}

    renewed = live.api.call("POST", f"/plans/{plan['id']}/api-key")["api_key"]
    assert renewed != key
    wait_until(lambda: httpx2.post(url, json={}, headers={"x-api-key": key}).status_code == 401)
    assert _tools(url, authorization=f"Bearer {renewed}") == {"get_item"}


def test_backend_secrets_are_used_and_rotated_without_restart(live: Deployment) -> None:
    service = live.api.import_echo()
    secret = live.api.call(
        "POST",
        "/secrets",
        201,
        json={
            "name": "echo-key",
            "kind": "api_key",
            "fields": {"name": "X-Echo-Key"},
            "values": {"value": "first-value"},
        },
    )
    live.api.expose(service["id"], live.backend, "echo", include=["secured"], secret_id=secret["id"])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))

    def sent_key() -> str:
        with McpHttp(url) as mcp:
            result = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result
            return str(result["structuredContent"]["header_digests"].get("X-Echo-Key"))

    assert sent_key() == digest("first-value")  # the backend echoes it: the client sees "***" and its digest
    live.api.call("PUT", f"/secrets/{secret['id']}/values", json={"values": {"value": "second-value"}})
    wait_until(lambda: sent_key() == digest("second-value"))


def test_deleting_an_exposition_stops_serving_it(live: Deployment) -> None:
    service = live.api.import_echo()
    _, exposition = live.api.expose(service["id"], live.backend, "echo", include=["get_item"])
    wait_until(lambda: live.served("/mcp/default/echo"))
    live.api.call("DELETE", f"/expositions/{exposition['id']}", 204)
    wait_until(lambda: httpx2.post(f"{live.base}/mcp/default/echo", json={}).status_code == 404)
    assert live.api.call("GET", "/gateways")[0]["name"] == "embedded"
