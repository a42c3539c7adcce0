"""Stdio MCP servers named in a configuration file (`stdio: {command, args, env, cwd}`): servers this project did
not write (the official Python SDK 1.8.1, which speaks 2024-11-05, and the last 1.x, 2025-11-25; the reference
server from npm) started by the gateway, imported, and served to clients of both eras; the child's environment
is only what the file gives it; a child that exits is started again; the gateway's end stops it; a snapshot
can never start one."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from apimcp.backends.base import ToolAnswer
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import ServerTemplate, Service
from apimcp.federation.backend import McpBackend
from apimcp.federation.listener import ProgressRoutes
from apimcp.federation.listing import import_stdio
from apimcp.federation.stdio_channel import StdioChannel, StdioCommand
from apimcp.gateway.backends import BackendFactory
from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.plan import plan_gateway
from apimcp.protocol.models import TextContent
from tests.gateway.conftest import gateway_of
from tests.support.idp import NODE, TOOLS
from tests.support.live_server import live_app
from tests.support.upstream_mcp import OLD_SDK_SERVER, ROOT

pytestmark = pytest.mark.anyio
EVERYTHING = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _python_of(version: str) -> Path:
    return ROOT / (".venv-mcp1" if version == "1" else f".venv-mcp-{version}") / "bin" / "python"


def _config(version: str, mark: Path) -> str:
    return f"""
services:
  old:
    stdio:
      command: {_python_of(version)}
      args: ["{OLD_SDK_SERVER}", "0", stdio]
      env: {{APIMCP_TEST_MARK: "{mark}", APIMCP_TEST_CRASHES: "{mark}.crashes", NOTE: written,
             SECRET: {{env: APIMCP_TEST_STDIO_SECRET}}}}
    timeout: 10
"""


@dataclass
class Served:
    url: str
    crashes: Path
    """Where the server notes each crash the `crash` tool makes."""


@pytest.fixture(scope="module", params=["1.8.1", "1"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder: Path = tmp_path_factory.mktemp("stdio")
    os.environ["APIMCP_TEST_STDIO_SECRET"] = "s3cret-value"
    os.environ["APIMCP_TEST_NOT_GIVEN"] = "kept-from-the-child"
    try:
        with live_app(lambda: gateway_of(_config(request.param, folder / "mark"), folder)) as base:
            yield Served(f"{base}/mcp/old", folder / "mark.crashes")
    finally:
        del os.environ["APIMCP_TEST_STDIO_SECRET"], os.environ["APIMCP_TEST_NOT_GIVEN"]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_stdio_servers_tools_prompts_and_resources_reach_each_client(served: Served, mode: str) -> None:
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    async with Client(served.url, mode=mode) as client:  # type: ignore[arg-type]
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"add", "count_slowly", "wait", "about", "crash"}
        assert _text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
        counted = await client.call_tool("count_slowly", {"upto": 2}, progress_callback=on_progress)
        assert not counted.is_error
        greeting = (await client.get_prompt("greet", {"who": "Ada"})).messages[0].content
        assert isinstance(greeting, types.TextContent) and greeting.text == "Say hello to Ada"
        note = (await client.read_resource("notes://first")).contents[0]
        assert isinstance(note, types.TextResourceContents) and note.text == "remember the milk"
    assert heard == [1.0, 2.0]


async def test_the_child_sees_only_the_environment_the_file_gives_it(served: Served) -> None:
    async with Client(served.url, mode="2026-07-28") as client:
        written = _text(await client.call_tool("about", {"variable": "NOTE"}))
        secret = _text(await client.call_tool("about", {"variable": "SECRET"}))
        not_given = _text(await client.call_tool("about", {"variable": "APIMCP_TEST_NOT_GIVEN"}))
        path = _text(await client.call_tool("about", {"variable": "PATH"}))
    assert written.split(" ")[2] == "written"
    # a {env: NAME} read from the gateway's environment: the child has it, and what it echoes of it is masked
    assert secret.split(" ")[3] == hashlib.sha256(b"s3cret-value").hexdigest()
    assert "s3cret-value" not in secret
    assert not_given.split(" ")[2] == ""  # the gateway's other variables stay out
    assert path.split(" ")[2] == os.environ["PATH"]  # enough to run a program
    pid, cwd = written.split(" ")[:2]
    assert int(pid) != os.getpid()
    assert Path(cwd).name.startswith("stdio")  # the configuration file's folder


async def test_a_child_that_exits_is_started_again_on_the_next_call(served: Served) -> None:
    async with Client(served.url, mode="2026-07-28") as client:
        before = _text(await client.call_tool("about", {"variable": "NOTE"})).split(" ")[0]
        crashed = await client.call_tool("crash", {})
        assert crashed.is_error  # the call that ended it gets no answer: a tool error says so
        assert "unavailable" in _text(crashed) or "exited" in _text(crashed)
        after = _text(await client.call_tool("about", {"variable": "NOTE"})).split(" ")[0]
        assert _text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    assert after != before
    assert served.crashes.read_text() == "crash\n"  # the call it died of was not sent again


async def _server_pid(backend: McpBackend, service: Service) -> int:
    """The process id the server's `about` tool says it runs as."""
    about = await backend.call(service.operation("about") or service.operations[0], {"variable": "X"})
    assert isinstance(about, ToolAnswer), about
    block = about.result.content[0]
    assert isinstance(block, TextContent)
    return int(block.text.split(" ")[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by anyone) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


async def test_a_call_the_gateway_gives_up_is_cancelled_and_closing_stops_the_child(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    command = StdioCommand(
        (str(_python_of("1")), str(OLD_SDK_SERVER), "0", "stdio"), {"APIMCP_TEST_MARK": str(mark)}, str(tmp_path)
    )
    service = import_stdio(command, timeout_seconds=10)
    assert service.servers[0].url == "stdio:python"
    http = new_session()
    backend = McpBackend(service, http, timeout_seconds=30, command=command)
    try:
        pid = await _server_pid(backend, service)
        assert _alive(pid)
        started = asyncio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        call = asyncio.create_task(backend.call(service.operation("wait") or service.operations[0], {}, on_progress))
        async with asyncio.timeout(15):  # guards far above what it takes
            await started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            while not mark.exists():  # noqa: ASYNC110 - written by the server's process
                await asyncio.sleep(0.05)
        assert mark.read_text() == "cancelled"
    finally:
        await backend.close()
        await close_session(http)
    assert not _alive(pid)


async def test_the_reference_server_over_stdio(tmp_path: Path) -> None:
    config = f"""
services:
  everything:
    stdio: {{command: "{NODE}", args: ["{EVERYTHING}", stdio]}}
    timeout: 10
"""
    with live_app(lambda: gateway_of(config, tmp_path)) as base:
        async with Client(f"{base}/mcp/everything", mode="2026-07-28") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "echo" in names
            assert _text(await client.call_tool("echo", {"message": "over stdio"})) == "Echo: over stdio"


def test_a_command_that_cannot_start_is_a_clear_configuration_error(tmp_path: Path) -> None:
    text = "services:\n  gone:\n    stdio: {command: ./no-such-server, args: [x]}\n"
    with pytest.raises(ConfigError, match=r"gateway.yaml:3.*could not be started: No such file or directory"):
        plan_gateway(parse_config(text, "gateway.yaml", tmp_path))


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("credentials: {type: bearer, token: {env: T}}", "credentials does not apply to a stdio server"),
        ("backend: http://127.0.0.1:1", "backend does not apply to a stdio server"),
        ("mcp: http://127.0.0.1:1/mcp", "give exactly one of openapi, graphql, grpc, mcp or stdio"),
    ],
)
def test_what_does_not_apply_to_a_stdio_server_is_refused(tmp_path: Path, extra: str, problem: str) -> None:
    text = f"services:\n  s:\n    stdio: {{command: {sys.executable}}}\n    {extra}\n"
    with pytest.raises(ConfigError, match=problem):
        parse_config(text, "gateway.yaml", tmp_path)


def test_an_environment_variable_s_name_is_checked(tmp_path: Path) -> None:
    text = f"services:\n  s:\n    stdio: {{command: {sys.executable}, env: {{'A-B': x}}}}\n"
    with pytest.raises(ConfigError, match="not an environment variable's name"):
        parse_config(text, "gateway.yaml", tmp_path)


async def test_a_snapshot_alone_never_starts_a_stdio_server(tmp_path: Path) -> None:
    """A gateway following a control plane builds backends from snapshots only: a stdio service in one (which no
    REST call can make) is refused, since the command is not in it."""
    command = StdioCommand((str(_python_of("1")), str(OLD_SDK_SERVER), "0", "stdio"), {}, str(tmp_path))
    service = import_stdio(command, timeout_seconds=10)
    assert service.servers == (ServerTemplate("stdio:python"),)
    http = new_session()
    try:
        factory = BackendFactory(http)
        member = {"service": {"id": "s1"}, "credentials": [], "backend_timeout_ms": 1000, "backend_endpoint": None}
        with pytest.raises(ValueError, match="started only from a configuration file"):
            factory.build(service, member)
        await factory.close()
    finally:
        await close_session(http)


def test_a_server_that_exits_at_once_is_reported_with_its_status_and_last_words(tmp_path: Path) -> None:
    script = "import sys; print('missing setting: TOKEN', file=sys.stderr); sys.exit(2)"
    text = f'services:\n  s:\n    stdio: {{command: {sys.executable}, args: ["-c", "{script}"]}}\n'
    with pytest.raises(ConfigError, match=r"exited \(status 2\); it wrote: missing setting: TOKEN"):
        plan_gateway(parse_config(text, "gateway.yaml", tmp_path))


_TELLING = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}}
    print(json.dumps(progress), flush=True)
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["method"]}}), flush=True)
"""


async def test_a_client_that_cannot_hear_progress_does_not_end_the_shared_channel() -> None:
    routes = ProgressRoutes()
    channel = StdioChannel(StdioCommand((sys.executable, "-c", _TELLING)), routes)

    async def gone(progress: float, total: float | None, message: str | None) -> None:
        raise ConnectionResetError("the client went away")

    await channel.open()
    try:
        with routes.route("t", gone):
            assert await channel.request("first", {}, 10) == {"echo": "first"}
        assert await channel.request("second", {}, 10) == {"echo": "second"}  # the channel still reads
    finally:
        await channel.close()
    assert channel.closed


async def test_a_child_that_stops_reading_fails_the_call_in_time_and_is_stopped() -> None:
    deaf = "import time; time.sleep(60)"  # never reads its input: the pipe fills up
    channel = StdioChannel(StdioCommand((sys.executable, "-c", deaf)), ProgressRoutes())
    await channel.open()
    try:
        with pytest.raises(TimeoutError):
            await channel.request("tools/call", {"blob": "x" * 1_000_000}, 1)  # more than a pipe holds
    finally:
        async with asyncio.timeout(30):  # a guard far above the seconds stopping takes
            await channel.close()


async def test_stopping_a_wrapped_server_stops_the_server_too(tmp_path: Path) -> None:
    """A wrapper (a shell, npx) runs the server as its own child: stopping the wrapper's group stops both."""
    wrapper = f'"{_python_of("1")}" "{OLD_SDK_SERVER}" 0 stdio; echo wrapper-done >&2'
    command = StdioCommand(("/bin/sh", "-c", wrapper), {}, str(tmp_path))
    service = import_stdio(command, timeout_seconds=10)
    http = new_session()
    backend = McpBackend(service, http, timeout_seconds=30, command=command)
    try:
        server = await _server_pid(backend, service)  # the server's own process, the shell's child
        assert _alive(server)
    finally:
        await backend.close()
        await close_session(http)
    async with asyncio.timeout(10):  # a guard: the signal was sent before close returned
        while _alive(server):  # noqa: ASYNC110 - another process's state
            await asyncio.sleep(0.05)
