"""An upstream MCP server's tools read at import, in the era it speaks, through the fetch policy."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from apimcp.catalog.model import McpBinding
from apimcp.federation import listing
from apimcp.federation.listing import import_upstream
from apimcp.importers.errors import SpecError
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import Fetcher, FetchLimits
from tests.support.live_server import live_server, whole_body
from tests.support.upstream_mcp import sdk_upstream, showcase_upstream

LOOPBACK = Fetcher(AddressPolicy.allowing(["127.0.0.1"]))


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with sdk_upstream() as url:
        yield url


def test_a_stateless_servers_tools_become_operations_with_their_definitions(sdk_url: str) -> None:
    service = import_upstream(sdk_url, fetcher=LOOPBACK)
    assert service.kind == "mcp" and service.name == "notes"
    assert service.servers[0].url == sdk_url
    tools = {op.tool_name: op for op in service.operations}
    assert set(tools) == {"add", "find_note", "count_slowly", "broken"}
    add = tools["add"]
    assert add.title == "Add two numbers" and add.description == "Add two integers and give their sum."
    assert add.input_schema["required"] == ["a", "b"]
    assert isinstance(add.binding, McpBinding) and add.binding.name == "add" and len(add.binding.digest) == 64
    assert tools["find_note"].hints.read_only is True


def test_a_session_era_servers_every_page_is_read_and_its_session_ended() -> None:
    with showcase_upstream(session_era=True) as upstream:
        service = import_upstream(upstream.url, name="showcase", version="2", fetcher=LOOPBACK, tool_prefix="sc_")
        assert len(upstream.store) == 0  # the session opened to read was deleted
    names = [op.tool_name for op in service.operations]
    assert "sc_echo" in names and "sc_regional" in names
    echo = next(op for op in service.operations if op.tool_name == "sc_echo")
    assert isinstance(echo.binding, McpBinding) and echo.binding.name == "echo"
    assert (service.name, service.version) == ("showcase", "2")
    assert len(names) == 24 and not service.warnings  # the showcase's tools, of every kind of result


def test_a_server_on_an_address_the_policy_refuses_is_not_read(sdk_url: str) -> None:
    with pytest.raises(SpecError, match="could not read the MCP server"):
        import_upstream(sdk_url)  # the default policy: public addresses only


async def _html_page(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
    await send({"type": "http.response.body", "body": b"<html>a web page</html>"})


def test_what_is_not_an_mcp_server_is_told() -> None:
    with (
        live_server(_html_page) as base,
        pytest.raises(SpecError, match=r"MCP server .*: the server.s answer is not JSON"),
    ):
        import_upstream(base.replace("//localhost:", "//127.0.0.1:") + "/mcp", fetcher=LOOPBACK)


def _endless_slow_pages(seconds: float) -> ASGIApp:
    """A stateless server whose tools/list has always one more page, each after `seconds`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = json.loads(await whole_body(receive))
        if request["method"] == "server/discover":
            result: dict[str, object] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        else:
            await asyncio.sleep(seconds)
            page = int(request.get("params", {}).get("cursor") or 0)
            tool = {"name": f"t{page}", "inputSchema": {"type": "object"}}
            result = {"tools": [tool], "nextCursor": str(page + 1)}
        payload = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})

    return app


def test_the_whole_reading_of_a_server_has_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding: only each request was bounded, so 100 pages at just under the timeout each held an import for
    an hour. Here each page takes 0.2 s and the whole reading 1 s, where 100 pages would take 20."""
    monkeypatch.setattr(listing, "READING_SECONDS", 1.0)
    quick = Fetcher(AddressPolicy.allowing(["127.0.0.1"]), FetchLimits(timeout_seconds=0.5))
    with live_server(_endless_slow_pages(0.2)) as base:
        started = time.monotonic()
        with pytest.raises(SpecError, match=r"was not read whole within 1 s"):
            import_upstream(base.replace("//localhost:", "//127.0.0.1:") + "/mcp", fetcher=quick)
        assert time.monotonic() - started < 5  # timing-ok: 100 pages take 20 s unbounded; 5 s is 5 times the deadline
