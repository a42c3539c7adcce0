"""An upstream MCP server's tools read at import, in the era it speaks, through the fetch policy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.types import Receive, Scope, Send

from apimcp.catalog.model import McpBinding
from apimcp.federation.listing import import_upstream
from apimcp.importers.errors import SpecError
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import Fetcher
from tests.support.live_server import live_server
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
