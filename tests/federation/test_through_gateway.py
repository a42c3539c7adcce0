"""MCP servers fronted by the gateway, called with the official client in both eras.

The upstreams: the official SDK's server (it speaks 2026-07-28: the gateway calls it statelessly) and this
project's showcase served in the session era only (the gateway holds a session with it). Each client era is
served from each upstream era.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import SeenHeaders, ShowcaseUpstream, sdk_upstream, showcase_upstream

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]
TOKEN = "upstream-token-3f9a"


@pytest.fixture(scope="module")
def seen() -> SeenHeaders:
    return SeenHeaders()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, seen: SeenHeaders) -> Iterator[tuple[str, ShowcaseUpstream]]:
    folder = tmp_path_factory.mktemp("federation")
    with (
        pytest.MonkeyPatch.context() as env,
        sdk_upstream(seen) as notes_url,
        showcase_upstream(session_era=True) as showcase,
    ):
        env.setenv("NOTES_TOKEN", TOKEN)
        config = f"""
services:
  notes:
    mcp: {notes_url}
    credentials: {{type: bearer, token: {{env: NOTES_TOKEN}}}}
    timeout: 5
  showcase:
    mcp: {showcase.url}
    tool_prefix: sc_
    include: [sc_echo, sc_image, sc_audio, sc_link, sc_annotated_text, sc_progress, sc_elicit, sc_fail,
              sc_structured_object, sc_regional, sc_slow, sc_sample, sc_roots, sc_elicit_twice]
    timeout: 5
expositions:
  mixed:
    services: [notes, showcase]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield f"{base}/mcp/mixed", showcase


@pytest.fixture(params=MODES)
async def client(gateway: tuple[str, ShowcaseUpstream], request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    url, _ = gateway
    async with Client(url, mode=request.param) as connected:
        yield connected


def text(result: types.CallToolResult, index: int = 0) -> str:
    content = result.content[index]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_one_exposition_lists_the_tools_of_both_servers(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"add", "find_note", "count_slowly", "broken", "sc_echo", "sc_regional"} <= set(tools)
    assert "sc_crash" not in tools  # the plan's include chose
    assert tools["add"].title == "Add two numbers"
    assert tools["find_note"].annotations is not None and tools["find_note"].annotations.read_only_hint is True


async def test_a_stateless_upstreams_tool_answers_with_its_structured_content(client: Client) -> None:
    result = await client.call_tool("add", {"a": 3, "b": 5})
    assert not result.is_error
    assert result.structured_content == {"result": 8}
    assert text(result) == "8"


async def test_a_session_era_upstreams_tool_answers_every_kind_of_content(client: Client) -> None:
    assert text(await client.call_tool("sc_echo", {"text": "héllo"})) == "héllo"
    image = (await client.call_tool("sc_image", {})).content[0]
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    annotated = (await client.call_tool("sc_annotated_text", {})).content[0]
    assert isinstance(annotated, types.TextContent) and annotated.annotations is not None
    assert annotated.annotations.audience == ["assistant"]
    structured = await client.call_tool("sc_structured_object", {})
    assert structured.structured_content == {"n": 1}


async def test_audio_and_links_reach_each_client_in_its_own_revisions_shape(client: Client) -> None:
    audio = (await client.call_tool("sc_audio", {})).content[0]
    assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
    link = (await client.call_tool("sc_link", {})).content[0]
    assert isinstance(link, types.ResourceLink) and str(link.uri) == "test://text"


async def test_progress_of_an_upstream_reaches_the_client(client: Client) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await client.call_tool("count_slowly", {"upto": 3}, progress_callback=on_progress)
    assert text(result) == "counted to 3"
    assert heard == [(1.0, 3.0, "at 1"), (2.0, 3.0, "at 2"), (3.0, 3.0, "at 3")]
    heard.clear()
    assert text(await client.call_tool("sc_progress", {}, progress_callback=on_progress)) == "done"
    assert [h[0] for h in heard] == [0.0, 50.0, 100.0]


async def test_an_upstreams_tool_error_stays_a_tool_error(client: Client) -> None:
    result = await client.call_tool("broken", {})
    assert result.is_error and text(result) == "Error executing tool broken"  # the SDK hides the exception
    failed = await client.call_tool("sc_fail", {})
    assert failed.is_error


async def test_arguments_are_checked_against_the_imported_schema_before_the_upstream_is_called(
    client: Client,
) -> None:
    result = await client.call_tool("add", {"a": "three"})
    assert result.is_error and "Invalid arguments for add" in text(result)


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    answers = {"First?": {"a": "first"}, "Second?": {"b": "second"}}
    return types.ElicitResult(action="accept", content=answers.get(params.message, {"name": "octocat"}))


async def _sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="four"), model="test-model"
    )


async def _roots(ctx: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///workspace")])


@pytest.mark.parametrize("mode", MODES)
async def test_what_an_upstream_asks_the_client_is_relayed_in_the_clients_dialect(
    gateway: tuple[str, ShowcaseUpstream], mode: str
) -> None:
    url, _ = gateway
    async with Client(
        url, mode=mode, elicitation_callback=_elicit, sampling_callback=_sample, list_roots_callback=_roots
    ) as client:
        assert text(await client.call_tool("sc_elicit", {})) == "Hello, octocat!"
        assert text(await client.call_tool("sc_sample", {})) == "model said: four"
        assert text(await client.call_tool("sc_roots", {})) == "file:///workspace"
        assert text(await client.call_tool("sc_elicit_twice", {})) == "first+second"


async def test_a_client_that_cannot_answer_makes_the_upstreams_request_fail_at_once(client: Client) -> None:
    result = await client.call_tool("sc_elicit", {})  # this client declared no elicitation capability
    assert result.is_error


async def test_only_the_plans_credential_reaches_the_upstream(
    gateway: tuple[str, ShowcaseUpstream], seen: SeenHeaders
) -> None:
    url, _ = gateway
    seen.authorization.clear()
    async with (
        httpx2.AsyncClient(headers={"Authorization": "Bearer the-clients-own"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
    ):
        assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
    assert seen.authorization and set(seen.authorization) == {f"Bearer {TOKEN}"}


async def test_a_session_the_upstream_forgot_is_opened_again(gateway: tuple[str, ShowcaseUpstream]) -> None:
    url, showcase = gateway
    store = showcase.store
    async with Client(url, mode="2026-07-28") as client:
        assert text(await client.call_tool("sc_echo", {"text": "one"})) == "one"
        for session_id in list(store._sessions):  # the upstream restarts, say
            await store.delete(session_id)
        assert text(await client.call_tool("sc_echo", {"text": "two"})) == "two"
    assert len(store) == 1


async def test_a_stateless_only_upstream_gets_the_mirror_headers_its_tools_declare(tmp_path: Path) -> None:
    with showcase_upstream(session_era=False) as upstream:
        config = f"""
services:
  showcase:
    mcp: {upstream.url}
    include: [regional]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            for mode in MODES:
                async with Client(f"{base}/mcp/showcase", mode=mode) as client:
                    result = await client.call_tool("regional", {"region": "eu-west", "count": 3, "query": "x"})
                    assert text(result) == "eu-west:3"


async def test_a_call_the_client_cancels_is_cancelled_upstream(gateway: tuple[str, ShowcaseUpstream]) -> None:
    url, showcase = gateway
    for mode in MODES:
        showcase.handler.cancelled.clear()
        async with Client(url, mode=mode) as client:
            await given_up_once_started(client, "sc_slow")
            await wait_for(lambda: bool(showcase.handler.cancelled))


async def test_a_cancelled_call_closes_its_stream_to_a_stateless_upstream(tmp_path: Path) -> None:
    with showcase_upstream(session_era=False) as upstream:
        config = f"""
services:
  showcase:
    mcp: {upstream.url}
    include: [slow]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            for mode in MODES:
                upstream.handler.cancelled.clear()
                async with Client(f"{base}/mcp/showcase", mode=mode) as client:
                    await given_up_once_started(client, "slow")
                    await wait_for(lambda: bool(upstream.handler.cancelled))


async def given_up_once_started(client: Client, tool: str) -> None:
    """Call `tool` and cancel the call once its first progress arrives (the upstream has started)."""
    with anyio.CancelScope() as scope:

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            scope.cancel()

        await client.call_tool(tool, {}, progress_callback=on_progress)
    assert scope.cancelled_caught


async def wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> None:
    """Until `condition` holds; fails after `seconds`, a guard far above what it takes."""
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - set by the upstream's thread, not an event of this loop
            await anyio.sleep(0.01)


async def test_a_stateless_upstreams_input_required_is_relayed_to_each_client(tmp_path: Path) -> None:
    with showcase_upstream(session_era=False) as upstream:
        config = f"""
services:
  showcase:
    mcp: {upstream.url}
    include: [elicit, sample, roots, elicit_twice]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            for mode in MODES:
                async with Client(
                    f"{base}/mcp/showcase",
                    mode=mode,
                    elicitation_callback=_elicit,
                    sampling_callback=_sample,
                    list_roots_callback=_roots,
                ) as client:
                    assert text(await client.call_tool("elicit", {})) == "Hello, octocat!"
                    assert text(await client.call_tool("sample", {})) == "model said: four"
                    assert text(await client.call_tool("roots", {})) == "file:///workspace"
                    assert text(await client.call_tool("elicit_twice", {})) == "first+second"


async def test_a_plan_that_says_so_passes_the_clients_own_token_to_the_upstream(tmp_path: Path) -> None:
    """The client's token reaches an MCP server only when the plan's header policy says so explicitly."""
    seen = SeenHeaders()
    with sdk_upstream(seen) as notes_url:
        config = f"""
services:
  notes:
    mcp: {notes_url}
    header_policy: {{passthrough: true}}
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer the-clients-own"}) as http,
                Client(streamable_http_client(f"{base}/mcp/notes", http_client=http), mode="2026-07-28") as client,
            ):
                seen.authorization.clear()  # what the import sent (no client then) is not the point
                assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
    # every request of the call, and nothing else (no stream serving every client opened with this one's token)
    assert seen.authorization and set(seen.authorization) == {"Bearer the-clients-own"}
