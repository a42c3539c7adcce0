"""MCP servers as services through the control plane: imported by the CLI and the REST API, planned with a
secret, exposed, called with the official client in both eras."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.support.upstream_mcp import SeenHeaders, old_sdk_upstream, sdk_upstream

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory.mktemp("cp") / "data") as running:
        yield running


@pytest.fixture(scope="module")
def seen() -> SeenHeaders:
    return SeenHeaders()


@pytest.fixture(scope="module")
def upstream(seen: SeenHeaders) -> Iterator[str]:
    with sdk_upstream(seen) as url:
        yield url


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (args, result.output)
    return result


async def call(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(url, mode=mode) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_an_mcp_server_imported_and_exposed_with_the_cli(live: Deployment, upstream: str, mode: str) -> None:
    run("login", live.base, "--token", live.api.http.headers["Authorization"].removeprefix("Bearer "))
    imported = json.loads(run("import", upstream, "--mcp", "--name", "notes", "--expose", "notes", "-o", "json").output)
    service = imported["service"]
    assert (service["kind"], service["operation_count"]) == ("mcp", 4)
    endpoint = imported["exposition"]["endpoints"][0]
    wait_until(lambda: live.served(endpoint))
    assert await call(live.base + endpoint, mode, "add", {"a": 2, "b": 40}) == {"result": 42}
    detail = live.api.call("GET", f"/services/{service['id']}")
    assert {op["signature"] for op in detail["operations"]} >= {"tool add", "tool find_note"}


def test_the_cli_takes_only_an_http_url_for_an_mcp_server(live: Deployment) -> None:
    run("login", live.base, "--token", live.api.http.headers["Authorization"].removeprefix("Bearer "))
    refused = run("import", "./server.py", "--mcp", code=2).output
    assert "--mcp takes the MCP server's http(s) URL" in refused


def test_an_mcp_server_is_imported_from_its_url_only(live: Deployment) -> None:
    files = {"file": ("server.json", b"{}", "application/json")}
    refused = live.api.call("POST", "/services", 422, files=files, data={"kind": "mcp", "name": "x"})
    assert "imported from its URL" in json.dumps(refused)


async def test_a_plans_secret_reaches_the_upstream_and_the_clients_token_does_not(
    live: Deployment, upstream: str, seen: SeenHeaders
) -> None:
    service = live.api.call("POST", "/services", 201, json={"url": upstream, "kind": "mcp", "name": "notes-secret"})
    secret = live.api.call(
        "POST", "/secrets", 201, json={"name": "notes-token", "kind": "bearer", "values": {"token": "n-7781"}}
    )
    created = live.api.call(
        "POST", "/plans", 201, json={"name": "notes-secret", "service_id": service["id"], "secret_ids": [secret["id"]]}
    )
    exposition = live.api.call("POST", "/expositions", 201, json={"plan_id": created["id"], "name": "notes-secret"})
    endpoint = exposition["endpoints"][0]
    wait_until(lambda: live.served(endpoint))
    seen.tool_calls.clear()
    assert await call(live.base + endpoint, "2026-07-28", "find_note", {"topic": "tea"}) == {
        "topic": "tea",
        "text": "all about tea",
    }
    assert seen.tool_calls == ["Bearer n-7781"]


async def test_an_http_sse_server_is_imported_by_the_rest_api_and_called(live: Deployment) -> None:
    with old_sdk_upstream("1.8.1", "sse") as upstream:  # the 2024-11-05 HTTP+SSE transport
        service = live.api.call("POST", "/services", 201, json={"url": upstream, "kind": "mcp", "name": "old-sse"})
        assert service["operation_count"] == 3  # add, count_slowly, wait
        plan = live.api.call("POST", "/plans", 201, json={"name": "old-sse", "service_id": service["id"]})
        exposition = live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "old-sse"})
        endpoint = exposition["endpoints"][0]
        wait_until(lambda: live.served(endpoint))
        async with Client(live.base + endpoint, mode="2026-07-28") as client:
            added = (await client.call_tool("add", {"a": 20, "b": 22})).content[0]
        assert getattr(added, "text", None) == "42"


async def test_each_gateway_s_word_on_a_server_s_health_reaches_the_service_view(live: Deployment) -> None:
    """The gateway says whether each MCP service's server answers; `GET /services/{id}` shows it by gateway."""
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(old_sdk_upstream("1"))
        service = live.api.call("POST", "/services", 201, json={"url": upstream, "kind": "mcp", "name": "mortal"})
        plan = live.api.call(
            "POST", "/plans", 201, json={"name": "mortal", "service_id": service["id"], "backend_timeout_ms": 3000}
        )
        exposition = live.api.call("POST", "/expositions", 201, json={"plan_id": plan["id"], "name": "mortal"})
        endpoint = exposition["endpoints"][0]
        wait_until(lambda: live.served(endpoint))

        def states() -> list[tuple[str, str]]:
            shown = live.api.call("GET", f"/services/{service['id']}")["upstream_health"]
            return [(h["gateway"], h["state"]) for h in shown]

        async with Client(live.base + endpoint, mode="2026-07-28") as client:
            assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
            wait_until(lambda: states() == [("embedded", "up")])
            stack.close()  # the server dies
            assert (await client.call_tool("add", {"a": 1, "b": 1})).is_error
            wait_until(lambda: states() == [("embedded", "failing")])
