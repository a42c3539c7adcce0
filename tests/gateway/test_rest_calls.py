"""OpenAPI operations called through the gateway with the official client, in both eras.

The echo backend answers with the request it received, so each test checks the exact
request the gateway built from the tool arguments.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import orjson
import pytest
from mcp import Client

from tests.gateway.conftest import text_of
from tests.protocol.showcase import PNG, WAV

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


@pytest.fixture(params=MODES)
async def client(gateway_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(gateway_url, mode=request.param) as connected:
        yield connected


async def echo(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    value = result.structured_content
    assert isinstance(value, dict)
    return value


async def test_tools_are_listed_with_hints(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"get_item", "replace_item", "delete_item", "query_styles", "upload", "post_raw", "get_media"} <= set(tools)
    get_item = tools["get_item"]
    assert get_item.title == "Read an item"
    assert get_item.annotations is not None and get_item.annotations.read_only_hint is True
    assert tools["delete_item"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert get_item.input_schema["required"] == ["itemId"]
    assert set(get_item.input_schema["properties"]) == {"itemId", "verbose", "X-Trace", "session"}


async def test_path_query_header_cookie(client: Client) -> None:
    sent = await echo(client, "get_item", {"itemId": "a/b c", "verbose": True, "X-Trace": "trace-1", "session": "s1"})
    assert sent["method"] == "GET"
    assert sent["path"] == "/v1/items/a%2Fb%20c"
    assert sent["query"] == "verbose=true"
    assert sent["headers"]["X-Trace"] == "trace-1"
    assert sent["cookies"] == {"session": "s1"}


async def test_json_body_drops_read_only_fields_and_keeps_nulls(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    properties = tools["replace_item"].input_schema["properties"]
    assert set(properties) == {"itemId", "name", "size", "parent"}  # body's read-only itemId gave way
    assert properties["size"]["type"] == ["integer", "null"]
    assert properties["parent"] == {"$ref": "#/$defs/Item"}  # recursive: a reference, not an inlined loop
    sent = await echo(client, "replace_item", {"itemId": "7", "name": "box", "size": None})
    assert sent["method"] == "PUT"
    assert sent["path"] == "/v1/items/7"
    assert sent["content_type"] == "application/json"
    assert sent["body"] == '{"name":"box","size":null}'


async def test_path_styles(client: Client) -> None:
    sent = await echo(
        client, "path_styles", {"simple": ["a", "b"], "label": ["x", "y"], "matrix": {"k": "v", "n": "1"}}
    )
    assert sent["path"] == "/v1/styles/a,b/.x.y/;matrix=k,v,n,1"


async def test_query_styles(client: Client) -> None:
    sent = await echo(
        client,
        "query_styles",
        {
            "form": ["a", "b"],
            "csv": [1, 2],
            "spaced": ["x", "y"],
            "piped": ["p", "q"],
            "filter": {"min": 1, "tag": "t t"},
            "free": {"k": "v"},
            "reserved": "a/b?c",
            "json": {"k": 1},
        },
    )
    assert sent["query"] == (
        "form=a&form=b&csv=1,2&spaced=x%20y&piped=p|q&filter%5Bmin%5D=1&filter%5Btag%5D=t%20t"
        "&k=v&reserved=a/b?c&json=%7B%22k%22%3A1%7D"
    )


async def test_form_body(client: Client) -> None:
    sent = await echo(client, "post_form", {"name": "n&m", "tags": ["a", "b"]})
    assert sent["content_type"] == "application/x-www-form-urlencoded"
    assert sent["body"] == "name=n%26m&tags=a&tags=b"


@pytest.mark.parametrize("file", [PNG, f"data:image/png;base64,{PNG}"])
async def test_multipart_upload_and_name_collision(client: Client, file: str) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools["upload"].input_schema["properties"]) == {"id", "file", "meta", "id__path"}
    sent = await echo(client, "upload", {"id__path": 5, "id": "body-id", "file": file, "meta": {"a": 1}})
    assert sent["path"] == "/v1/uploads/5"
    assert sent["content_type"].startswith("multipart/form-data; boundary=")
    raw = base64.b64decode(sent["body_base64"])
    assert b'name="id"\r\n\r\nbody-id' in raw
    assert base64.b64decode(PNG) in raw
    assert b'name="meta"' in raw and b'{"a":1}' in raw
    if file.startswith("data:"):
        assert b"Content-Type: image/png" in raw


async def test_binary_and_text_bodies(client: Client) -> None:
    raw = await echo(client, "post_raw", {"body": base64.b64encode(b"\x00\x01bytes").decode()})
    assert raw["content_type"] == "application/octet-stream"
    assert base64.b64decode(raw["body_base64"]) == b"\x00\x01bytes"
    text = await echo(client, "post_text", {"body": "hello there"})
    assert text["content_type"] == "text/plain"
    assert text["body"] == "hello there"


async def test_bad_file_content_is_a_tool_error(client: Client) -> None:
    result = await client.call_tool("post_raw", {"body": "not base64 !!"})
    assert result.is_error
    assert "'body'" in text_of(result) and "base64" in text_of(result)


async def test_array_bodies_and_results(client: Client) -> None:
    result = await client.call_tool("post_list", {"body": [3, 1]})
    assert orjson.loads(text_of(result)) == [3, 1]
    expected = [3, 1] if client.protocol_version == "2026-07-28" else {"result": [3, 1]}
    assert result.structured_content == expected


@pytest.mark.parametrize(
    ("kind", "content_type"),
    [("png", types.ImageContent), ("wav", types.AudioContent), ("pdf", types.EmbeddedResource)],
)
async def test_binary_responses(client: Client, kind: str, content_type: type) -> None:
    result = await client.call_tool("get_media", {"kind": kind})
    block = result.content[0]
    assert isinstance(block, content_type)
    if kind == "png":
        assert block.data == PNG  # type: ignore[attr-defined]
        assert block.mime_type == "image/png"  # type: ignore[attr-defined]
    if kind == "wav":
        assert block.data == WAV  # type: ignore[attr-defined]
    if kind == "pdf":
        assert block.resource.mime_type == "application/pdf"  # type: ignore[attr-defined]
        assert base64.b64decode(block.resource.blob) == b"%PDF-1.4 fake"  # type: ignore[attr-defined]
        assert str(block.resource.uri).endswith("/v1/media/pdf")  # type: ignore[attr-defined]


async def test_text_and_empty_responses(client: Client) -> None:
    assert text_of(await client.call_tool("get_media", {"kind": "text"})) == "plain words"
    assert text_of(await client.call_tool("get_media", {"kind": "empty"})) == "Done (HTTP 204, no content)."


async def test_output_schemas_only_for_json_only_operations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["get_media"].output_schema is None  # it may answer an image
    assert tools["get_shape"].output_schema["required"] == ["sides"]  # type: ignore[index]
    good = await client.call_tool("get_shape", {"kind": "good"})
    assert good.structured_content == {"sides": 3}


async def test_response_not_matching_the_description_is_an_error_with_the_data(client: Client) -> None:
    result = await client.call_tool("get_shape", {"kind": "bad"})
    assert result.is_error
    assert "not as its API description says" in text_of(result)
    assert '{"sides": "three"}' in text_of(result)


@pytest.mark.parametrize("code", [400, 404, 500, 503])
async def test_error_statuses(client: Client, code: int) -> None:
    result = await client.call_tool("get_status", {"code": code})
    assert result.is_error
    assert text_of(result).startswith(f"HTTP {code} ")
    assert f"status {code} body" in text_of(result)


async def test_timeout(client: Client) -> None:
    result = await client.call_tool("slow", {})
    assert result.is_error
    assert text_of(result) == "The backend did not answer within 1 s (127.0.0.1:" + text_of(result).split(":")[-1]


async def test_response_size_limit(client: Client) -> None:
    result = await client.call_tool("big", {})
    assert result.is_error
    assert "larger than the 1048576 bytes allowed" in text_of(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("get_item", {}, "itemId"),
        ("get_status", {"code": "abc"}, "code"),
        ("get_status", {"code": 42}, "code"),
        ("get_media", {"kind": "gif"}, "kind"),
        ("get_item", {"itemId": "1", "unknown": 1}, "unknown"),
    ],
)
async def test_invalid_arguments_are_tool_errors_naming_the_field(
    client: Client, tool: str, arguments: dict[str, Any], named: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert text_of(result).startswith(f"Invalid arguments for {tool}: ")
    assert named in text_of(result)


async def test_unknown_tool_is_a_protocol_error(client: Client) -> None:
    with pytest.raises(Exception, match="Unknown tool: nope"):
        await client.call_tool("nope", {})
