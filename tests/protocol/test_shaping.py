"""Per-revision result shaping, checked on the wire for all five revisions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.protocol.showcase import PNG, WAV
from tests.support.mcp_http import MODERN, SESSION_VERSIONS, McpHttp

ALL_VERSIONS = (*SESSION_VERSIONS, MODERN)
NEWER_THAN = {v: ALL_VERSIONS.index(v) for v in ALL_VERSIONS}


def at_least(version: str, minimum: str) -> bool:
    return NEWER_THAN[version] >= NEWER_THAN[minimum]


def call(mcp: McpHttp, version: str, method: str, params: dict[str, Any] | None = None) -> Any:
    """The result of one request made at `version` (a fresh session for session revisions)."""
    if version == MODERN:
        return mcp.modern(method, params or {}).result
    return mcp.initialize(version).request(method, params or {}).result


def tools(mcp: McpHttp, version: str) -> dict[str, Any]:
    if version == MODERN:
        first = mcp.modern("tools/list").result
        second = mcp.modern("tools/list", {"cursor": first["nextCursor"]}).result
    else:
        session = mcp.initialize(version)
        first = session.request("tools/list", {}).result
        second = session.request("tools/list", {"cursor": first["nextCursor"]}).result
    return {t["name"]: t for t in first["tools"] + second["tools"]}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_tool_definition_fields(mcp: McpHttp, version: str) -> None:
    echo = tools(mcp, version)["echo"]
    assert echo["name"] == "echo"
    assert echo["description"] == "Echo the text back"
    assert echo["inputSchema"]["required"] == ["text"]
    assert ("title" in echo) is at_least(version, "2025-06-18")
    assert ("_meta" in echo) is at_least(version, "2025-06-18")
    assert ("icons" in echo) is at_least(version, "2025-11-25")
    if version == "2024-11-05":
        assert "annotations" not in echo
    elif version == "2025-03-26":
        assert echo["annotations"] == {"title": "Echo", "readOnlyHint": True}  # title travels here
    else:
        assert echo["annotations"] == {"readOnlyHint": True}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_output_schema(mcp: McpHttp, version: str) -> None:
    listed = tools(mcp, version)
    if not at_least(version, "2025-06-18"):
        assert "outputSchema" not in listed["structured_object"]
        return
    assert listed["structured_object"]["outputSchema"]["type"] == "object"
    array_schema = listed["structured_array"]["outputSchema"]
    if version == MODERN:
        assert array_schema == {"type": "array", "items": {"type": "integer"}}
    else:  # 2025-06-18 and 2025-11-25 require an object schema
        assert array_schema == {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        }


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_structured_content(mcp: McpHttp, version: str) -> None:
    obj = call(mcp, version, "tools/call", {"name": "structured_object"})
    arr = call(mcp, version, "tools/call", {"name": "structured_array"})
    only = call(mcp, version, "tools/call", {"name": "structured_only"})
    if not at_least(version, "2025-06-18"):
        assert "structuredContent" not in obj and "structuredContent" not in arr
    else:
        assert obj["structuredContent"] == {"n": 1}
        assert arr["structuredContent"] == ([1, 2] if version == MODERN else {"result": [1, 2]})
    # A result with only structured data still carries it as text for every client.
    assert only["content"] == [{"type": "text", "text": '{"only":true}'}]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_audio_content(mcp: McpHttp, version: str) -> None:
    (block,) = call(mcp, version, "tools/call", {"name": "audio"})["content"]
    if version == "2024-11-05":
        assert block == {
            "type": "resource",
            "resource": {"uri": "apimcp:content/0", "blob": WAV, "mimeType": "audio/wav"},
        }
    else:
        assert block == {"type": "audio", "data": WAV, "mimeType": "audio/wav"}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_resource_links(mcp: McpHttp, version: str) -> None:
    (block,) = call(mcp, version, "tools/call", {"name": "link"})["content"]
    if not at_least(version, "2025-06-18"):
        assert block == {"type": "text", "text": "Some text: test://text (A text)"}
        return
    assert block["type"] == "resource_link"
    assert block["uri"] == "test://text"
    assert block["title"] == "Some text"
    assert ("icons" in block) is at_least(version, "2025-11-25")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_content_annotations_and_meta(mcp: McpHttp, version: str) -> None:
    (text,) = call(mcp, version, "tools/call", {"name": "annotated_text"})["content"]
    assert text["annotations"]["audience"] == ["assistant"]
    assert text["annotations"]["priority"] == 1.0
    assert ("lastModified" in text["annotations"]) is at_least(version, "2025-06-18")
    assert ("_meta" in text) is at_least(version, "2025-06-18")
    (embedded,) = call(mcp, version, "tools/call", {"name": "embedded"})["content"]
    assert embedded["resource"]["blob"] == PNG
    assert ("_meta" in embedded["resource"]) is at_least(version, "2025-06-18")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_prompts(mcp: McpHttp, version: str) -> None:
    (greet,) = call(mcp, version, "prompts/list")["prompts"]
    assert greet["arguments"][0]["required"] is True
    assert ("title" in greet) is at_least(version, "2025-06-18")
    assert ("title" in greet["arguments"][0]) is at_least(version, "2025-06-18")
    assert ("icons" in greet) is at_least(version, "2025-11-25")
    messages = call(mcp, version, "prompts/get", {"name": "greet", "arguments": {"who": "Ada"}})["messages"]
    assert messages[0] == {"role": "user", "content": {"type": "text", "text": "Say hello to Ada"}}
    assert messages[1]["content"]["type"] == ("resource" if version == "2024-11-05" else "audio")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_resources(mcp: McpHttp, version: str) -> None:
    text, blob = call(mcp, version, "resources/list")["resources"]
    assert text["size"] == 5 and text["mimeType"] == "text/plain"
    assert ("title" in text) is at_least(version, "2025-06-18")
    assert ("lastModified" in text["annotations"]) is at_least(version, "2025-06-18")
    assert blob == {"uri": "test://blob", "name": "blob", "mimeType": "image/png"}
    (template,) = call(mcp, version, "resources/templates/list")["resourceTemplates"]
    assert template["uriTemplate"] == "test://items/{id}"
    assert ("title" in template) is at_least(version, "2025-06-18")
    contents = call(mcp, version, "resources/read", {"uri": "test://blob"})["contents"]
    assert contents == [{"uri": "test://blob", "blob": PNG, "mimeType": "image/png"}]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_session_results_never_carry_modern_fields(mcp: McpHttp, version: str) -> None:
    result = call(mcp, version, "tools/list")
    modern_fields = {"resultType", "ttlMs", "cacheScope"}
    if version == MODERN:
        assert modern_fields <= result.keys()
    else:
        assert not modern_fields & result.keys()
        assert "_meta" not in result
