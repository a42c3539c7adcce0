"""The official Python SDK client (mcp 2.3) against the engine, in both eras."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.shared.subscriptions import ToolsListChanged

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "octocat"})


async def _sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="four"), model="test-model"
    )


async def _roots(ctx: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///workspace")])


def _client(url: str, mode: str, **kwargs: Any) -> Client:
    return Client(
        url,
        mode=mode,  # type: ignore[arg-type]
        elicitation_callback=_elicit,
        sampling_callback=_sample,
        list_roots_callback=_roots,
        **kwargs,
    )


@pytest.mark.parametrize("mode", MODES)
async def test_negotiated_version(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")


async def test_auto_mode_picks_2026(url: str) -> None:
    async with Client(url) as client:
        assert client.protocol_version == "2026-07-28"


@pytest.mark.parametrize("mode", MODES)
async def test_tools(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        first = await client.list_tools()
        assert first.next_cursor == "page-2"
        second = await client.list_tools(cursor=first.next_cursor)
        assert second.next_cursor is None
        names = {t.name for t in first.tools + second.tools}
        assert {"echo", "structured_object", "regional"} <= names
        echo = next(t for t in first.tools if t.name == "echo")
        assert echo.title == "Echo"
        result = await client.call_tool("echo", {"text": "hello"})
        assert result.content == [types.TextContent(type="text", text="hello")]
        assert not result.is_error
        structured = await client.call_tool("structured_object")
        assert structured.structured_content == {"n": 1}
        failed = await client.call_tool("fail")
        assert failed.is_error
        regional = await client.call_tool("regional", {"region": "eu-west", "count": 2})
        assert regional.content[0].text == "eu-west:2"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_content_types(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        audio = await client.call_tool("audio")
        assert isinstance(audio.content[0], types.AudioContent)
        link = await client.call_tool("link")
        assert isinstance(link.content[0], types.ResourceLink)
        embedded = await client.call_tool("embedded")
        assert isinstance(embedded.content[0], types.EmbeddedResource)


@pytest.mark.parametrize("mode", MODES)
async def test_prompts(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["greet"]
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content == types.TextContent(type="text", text="Say hello to Ada")


@pytest.mark.parametrize("mode", MODES)
async def test_resources(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        resources = await client.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["test://text", "test://blob"]
        templates = await client.list_resource_templates()
        assert templates.resource_templates[0].uri_template == "test://items/{id}"
        text = await client.read_resource("test://text")
        assert text.contents[0].text == "hello"  # type: ignore[union-attr]
        item = await client.read_resource("test://items/42")
        assert item.contents[0].text == "item 42"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_completion(url: str, mode: str) -> None:
    async with _client(url, mode) as client:
        result = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "b"}
        )
        assert result.completion.values == ["bob"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "expected"),
    [("elicit", "Hello, octocat!"), ("sample", "model said: four"), ("roots", "file:///workspace")],
)
async def test_client_input_round_trips(url: str, mode: str, tool: str, expected: str) -> None:
    async with _client(url, mode) as client:
        result = await client.call_tool(tool)
        assert result.content[0].text == expected  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_multi_round_elicitation(url: str, mode: str) -> None:
    answers = iter(["first", "second"])

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        key = "a" if "First" in params.message else "b"
        return types.ElicitResult(action="accept", content={key: next(answers)})

    async with Client(url, mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
        result = await client.call_tool("elicit_twice")
        assert result.content[0].text == "first+second"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_progress(url: str, mode: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with _client(url, mode) as client:
        result = await client.call_tool("progress", progress_callback=on_progress)
        assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert seen == [0, 50, 100]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # logging/setLevel, by the SDK
async def test_logging(url: str, mode: str) -> None:
    levels: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        levels.append(params.level)

    async with _client(url, mode, logging_callback=on_log, log_level="info") as client:
        if mode == "legacy":
            await client.set_logging_level("info")
        await client.call_tool("logs")
    assert levels == ["info", "error"]


async def test_listen_sees_list_changes(url: str) -> None:
    async with _client(url, "2026-07-28") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("notify_changes")
            event = await subscription.__anext__()
        assert isinstance(event, ToolsListChanged)
