"""Tool search from a snapshot: the members' services become what search_tools can keep to, named by their
name, or `name:version` where members share a name."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.gateway.runtime import GatewayRuntime, service_names
from tests.gateway.test_runtime import exposition, snapshot

pytestmark = pytest.mark.anyio


def _member(name: str, version: str, key: str = "s") -> dict[str, Any]:
    return {"service": {"id": key, "name": name, "version": version, "hash": "h1"}}


def test_members_are_named_by_service_and_by_version_where_names_are_shared() -> None:
    assert service_names([_member("Echo", "1"), _member("Shop", "1")]) == ["Echo", "Shop"]
    assert service_names([_member("Echo", "1"), _member("Echo", "2"), _member("Shop", "1")]) == [
        "Echo:1", "Echo:2", "Shop",
    ]  # fmt: skip
    # The finding: two descriptions titled and versioned alike (FastAPI's defaults) became one filter value
    twins = [_member("FastAPI", "0.1.0", "tickets"), _member("FastAPI", "0.1.0", "billing"), _member("Shop", "1")]
    assert service_names(twins) == ["tickets", "billing", "Shop"]


async def test_search_keeps_to_the_member_service_asked_for(runtime: GatewayRuntime) -> None:
    entry = exposition("two", ["get_item", "delete_item"], prefix="v2_")
    second = {**entry["members"][0], "tool_prefix": "v3_"}
    second["service"] = {**second["service"], "version": "3.0"}
    entry["members"].append(second)
    entry["tool_search"] = True
    runtime.apply(snapshot(1, entry))
    handler = runtime.routes.by_id["two"].endpoint.handler
    listed = await handler.list_tools(None, None)  # type: ignore[arg-type]
    properties = listed.items[0].input_schema["properties"]
    assert properties["service"]["enum"] == ["Echo API:2.1", "Echo API:3.0"]
    arguments = {"query": "item", "service": "Echo API:3.0", "limit": 20}
    found = await handler.call_tool(None, "search_tools", arguments)  # type: ignore[arg-type]
    assert sorted(hit["name"] for hit in found.structured_content["tools"]) == ["v3_delete_item", "v3_get_item"]
