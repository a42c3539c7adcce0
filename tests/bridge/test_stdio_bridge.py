"""`apimcp stdio URL` driven by the official Python client's stdio transport, in both eras, against the
engine's showcase over HTTP: lists, calls, an elicitation the server asks in the middle of a call (session
era: a server-to-client request whose answer the bridge POSTs back; 2026-07-28: input_required rounds).
Raw lines check what a client receives when the endpoint cannot answer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(sessions=MemorySessionStore(), client_request_timeout=10))
    with live_server(endpoint, endpoint.shutdown) as base:
        yield f"{base}/mcp"


def _bridge(url: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "apimcp.cli", "stdio", url, *extra])


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "stdio"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_an_sdk_client_over_stdio_uses_the_endpoint(url: str, mode: str) -> None:
    async def run() -> list[str]:
        async with Client(_bridge(url), mode=mode, elicitation_callback=_elicit) as client:  # type: ignore[arg-type]
            listed = await client.list_tools()
            echoed = await client.call_tool("echo", {"text": "over stdio"})
            asked = await client.call_tool("elicit")
            return [listed.tools[0].name, echoed.content[0].text, asked.content[0].text]  # type: ignore[union-attr]

    first, echoed, asked = anyio.run(run)
    assert first == "echo"  # the first page of the showcase's tools
    assert echoed == "over stdio"
    assert asked == "Hello, stdio!"


def _exchange(url: str, lines: list[Any]) -> list[Any]:
    sent = b"".join((orjson.dumps(line) if not isinstance(line, bytes) else line) + b"\n" for line in lines)
    done = subprocess.run(
        [sys.executable, "-m", "apimcp.cli", "stdio", url], input=sent, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [orjson.loads(line) for line in done.stdout.splitlines()]


def test_what_the_endpoint_cannot_answer_is_an_error_for_the_request(url: str) -> None:
    answers = _exchange(url, [b"{not json", {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}])
    assert answers[0]["error"]["code"] == -32700
    # no initialize first: the endpoint's own JSON-RPC error reaches the client as it is
    assert answers[1]["id"] == 5 and answers[1]["error"]["code"] != -32603
    unreachable = _exchange("http://127.0.0.1:9/mcp", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert unreachable == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": unreachable[0]["error"]["message"]}}
    ]
    assert "127.0.0.1:9" in unreachable[0]["error"]["message"]


def test_a_bad_option_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "apimcp.cli", "stdio", "http://127.0.0.1:9/mcp", "--header", "nocolon"],
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and b"--header" in done.stderr + done.stdout


class _Recorder:
    """An endpoint that answers every POST with an empty result and keeps the headers it was sent; `/same` and
    `/away` redirect (307) to its own `/mcp` and to `away` (another origin: another port)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.away = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] in ("/same", "/away"):
            location = "/mcp" if scope["path"] == "/same" else self.away
            await send({"type": "http.response.start", "status": 307, "headers": [(b"location", location.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        body = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


def test_the_bridge_s_headers_never_follow_a_redirect_to_another_origin() -> None:
    """Issue 21, L1: a 307 to another origin is not followed (aiohttp followed it with every --header, dropping
    only the api key); a redirect within the endpoint's origin still is."""
    here, elsewhere = _Recorder(), _Recorder()
    with live_server(here) as base, live_server(elsewhere) as other:
        here.away = f"{other}/mcp"
        credentials = ["--header", "X-Tenant-Key: tenant-secret", "--api-key", "api-secret"]
        ping = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + b"\n"
        runs = {}
        for path in ("/same", "/away"):
            runs[path] = subprocess.run(
                [sys.executable, "-m", "apimcp.cli", "stdio", f"{base}{path}", *credentials],
                input=ping, capture_output=True, timeout=60, check=False,
            )  # fmt: skip
    assert elsewhere.seen == []
    assert [seen["x-tenant-key"] for seen in here.seen] == ["tenant-secret"]  # /same, followed to /mcp
    assert orjson.loads(runs["/same"].stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    refused = orjson.loads(runs["/away"].stdout)
    assert refused["id"] == 1 and refused["error"]["code"] == -32603
    assert f"redirected the request to {other}, another origin: not followed" in refused["error"]["message"]
    assert b"another origin: not followed" in runs["/away"].stderr
    assert b"tenant-secret" not in runs["/away"].stderr + runs["/away"].stdout
