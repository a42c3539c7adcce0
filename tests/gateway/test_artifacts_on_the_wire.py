"""reShapr's matrix rows for prompts and resources, on the wire of every revision, against a real exposition.

The conformance fixture covers the engine (tests/protocol/test_seed_matrix.py); here the same rows
are served by a gateway exposition built from artifact files, so the shaping per revision (titles,
icons, `_meta`, error codes, cache hints, capabilities) is checked on what users attach.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.artifact_gateway import artifact_gateway
from tests.support.mcp_http import MODERN, SESSION_VERSIONS, McpHttp, Reply

ALL_VERSIONS = (*SESSION_VERSIONS, MODERN)
MOOD_PROMPT = {"type": "ref/prompt", "name": "recommend_books"}
ROWS = [
    ("prompts/list", {}),
    ("prompts/get", {"name": "recommend_books", "arguments": {"mood": "gloomy"}}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "note://bookshelf/house-rules"}),
    ("resources/read", {"uri": "file:///books/1"}),
    ("completion/complete", {"ref": MOOD_PROMPT, "argument": {"name": "mood", "value": "r"}}),
]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with artifact_gateway(tmp_path_factory.mktemp("wire")) as served:
        yield served


@pytest.fixture
def mcp(url: str) -> Iterator[McpHttp]:
    with McpHttp(url) as client:
        yield client


def request(mcp: McpHttp, version: str, method: str, params: dict[str, Any]) -> Reply:
    if version == MODERN:
        return mcp.modern(method, params)
    return mcp.initialize(version).request(method, params)


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize(("method", "params"), ROWS)
def test_every_prompt_and_resource_row_answers_in_every_revision(
    mcp: McpHttp, version: str, method: str, params: dict[str, Any]
) -> None:
    reply = request(mcp, version, method, params)
    assert reply.status == 200
    assert "result" in reply.body, reply.body


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_capabilities_say_what_the_exposition_serves(mcp: McpHttp, version: str) -> None:
    capabilities = mcp.initialize(version).init_reply.result["capabilities"]
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"]["listChanged"] is True
    assert capabilities["tools"] == {"listChanged": True}
    if version != "2024-11-05":  # completion/complete appeared in 2025-03-26
        assert capabilities["completions"] == {}


def test_discover_says_the_same(mcp: McpHttp) -> None:
    capabilities = mcp.modern("server/discover").result["capabilities"]
    assert {"prompts", "resources", "tools", "completions"} <= capabilities.keys()


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_titles_and_icons_appear_from_the_revision_that_defines_them(mcp: McpHttp, version: str) -> None:
    prompts = request(mcp, version, "prompts/list", {}).result["prompts"]
    recommend = next(p for p in prompts if p["name"] == "recommend_books")
    resources = request(mcp, version, "resources/list", {}).result["resources"]
    card = next(r for r in resources if r["uri"] == "ui://bookshelf/book-card.html")
    titled = version not in ("2024-11-05", "2025-03-26")
    assert ("title" in recommend) is titled
    assert ("title" in card) is titled
    assert ("icons" in card) is (version in ("2025-11-25", MODERN))
    assert card["mimeType"] == "text/html;profile=mcp-app"


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_prompt_renders_with_its_argument_and_refuses_without_it(mcp: McpHttp, version: str) -> None:
    rendered = request(mcp, version, "prompts/get", {"name": "recommend_books", "arguments": {"mood": "gloomy"}})
    (message,) = rendered.result["messages"]
    assert message["role"] == "user" and "feels gloomy today" in message["content"]["text"]
    missing = request(mcp, version, "prompts/get", {"name": "recommend_books", "arguments": {}})
    assert missing.error["code"] == -32602 and "mood" in missing.error["message"]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_an_unknown_resource_is_the_revisions_not_found_error(mcp: McpHttp, version: str) -> None:
    reply = request(mcp, version, "resources/read", {"uri": "note://nothing"})
    if version == MODERN:
        assert reply.status == 400
        assert reply.error["code"] == -32602 and reply.error["data"] == {"uri": "note://nothing"}
    else:
        assert reply.status == 200 and reply.error["code"] == -32002


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_cache_hints_go_to_2026_clients_only(mcp: McpHttp, version: str) -> None:
    listed = request(mcp, version, "prompts/list", {}).result
    read = request(mcp, version, "resources/read", {"uri": "file:///books/1"}).result
    if version == MODERN:
        assert (listed["ttlMs"], listed["cacheScope"]) == (300000, "public")
        assert (read["ttlMs"], read["cacheScope"]) == (1000, "private")
    else:
        assert not {"ttlMs", "cacheScope", "resultType"} & (listed.keys() | read.keys())


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_template_read_reaches_the_backend_with_the_variables_value(mcp: McpHttp, version: str) -> None:
    (contents,) = request(mcp, version, "resources/read", {"uri": "file:///books/3"}).result["contents"]
    assert contents["uri"] == "file:///books/3" and contents["mimeType"] == "application/json"
    assert '"id":3' in contents["text"].replace(" ", "")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_tool_bound_to_a_ui_resource_says_so_in_its_meta(mcp: McpHttp, version: str) -> None:
    tools = {t["name"]: t for t in request(mcp, version, "tools/list", {}).result["tools"]}
    if version in ("2024-11-05", "2025-03-26"):  # a tool's _meta appeared in 2025-06-18 (MCP Apps need it)
        assert "_meta" not in tools["get_book"]
    else:
        assert tools["get_book"]["_meta"]["ui"] == {"resourceUri": "ui://bookshelf/book-card.html"}


def test_a_path_escaping_a_templates_folder_never_reaches_the_backend(mcp: McpHttp, tmp_path: Path) -> None:
    reply = mcp.modern("resources/read", {"uri": "file:///books/../openapi.yaml"})
    assert reply.error["code"] == -32602 and reply.error["data"] == {"uri": "file:///books/../openapi.yaml"}


@pytest.mark.parametrize("version", [SESSION_VERSIONS[-1], MODERN])
def test_a_template_read_the_backend_knows_nothing_of_is_not_found(mcp: McpHttp, version: str) -> None:
    reply = request(mcp, version, "resources/read", {"uri": "file:///books/9999"})
    assert reply.error["code"] == (-32602 if version == MODERN else -32002)
    assert reply.error["data"] == {"uri": "file:///books/9999"}
