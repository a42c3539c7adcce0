"""Applying snapshots: what is kept, rebuilt, shared, dropped, and what a broken exposition does."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.gateway.runtime import GatewayRuntime
from apimcp.importers.openapi import import_openapi
from tests.gateway.conftest import ECHO_SPEC

pytestmark = pytest.mark.anyio
SERVICE = import_openapi(str(ECHO_SPEC))


def exposition(identifier: str, include: list[str], *, prefix: str = "", created: str = "2026-01-01") -> dict[str, Any]:
    return {
        "id": identifier,
        "name": identifier,
        "organization": "acme",
        "created_at": created,
        "title": None,
        "instructions": None,
        "cache": {},
        "output_schemas": True,
        "inbound": {"mode": "none"},
        "members": [
            {
                "service": {"id": "s1", "name": "Echo API", "version": "2.1", "hash": "h1"},
                "plan": "p",
                "backend_endpoint": "http://127.0.0.1:9",
                "backend_timeout_ms": 1000,
                "include": include,
                "exclude": [],
                "tool_prefix": prefix,
                "credentials": None,
            }
        ],
    }


def snapshot(revision: int, *expositions: dict[str, Any]) -> dict[str, Any]:
    return {"format": 1, "revision": revision, "services": {"h1": SERVICE}, "expositions": list(expositions)}


async def tool_names(runtime: GatewayRuntime, identifier: str) -> list[str]:
    page = await runtime.routes.by_id[identifier].endpoint.handler.list_tools(None, None)  # type: ignore[arg-type]
    return [tool.name for tool in page.items]


async def test_expositions_with_the_same_selection_share_their_tools(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, exposition("a", ["get_item"]), exposition("b", ["get_item"]), exposition("c", [])))
    pages = {}
    for identifier in ("a", "b", "c"):
        pages[identifier] = await runtime.routes.by_id[identifier].endpoint.handler.list_tools(None, None)  # type: ignore[arg-type]
    assert pages["a"] is pages["b"]
    assert pages["a"] is not pages["c"] and len(pages["c"].items) == len(SERVICE.operations)


async def test_a_prefixed_members_patterns_match_tool_names_with_or_without_the_prefix(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, exposition("a", ["get_item", "e_delete_item"], prefix="e_")))
    assert sorted(await tool_names(runtime, "a")) == ["e_delete_item", "e_get_item"]


async def test_unchanged_expositions_are_kept_changed_ones_keep_their_endpoint(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, exposition("a", ["get_item"]), exposition("b", ["get_item"])))
    a, b = runtime.routes.by_id["a"], runtime.routes.by_id["b"]
    handler_b = b.endpoint.handler
    runtime.apply(snapshot(2, exposition("a", ["get_item"]), exposition("b", ["get_item", "delete_item"])))
    assert runtime.routes.revision == 2
    assert runtime.routes.by_id["a"] is a  # untouched
    assert runtime.routes.by_id["b"].endpoint is b.endpoint  # same endpoint: sessions survive
    assert runtime.routes.by_id["b"].endpoint.handler is not handler_b
    assert await tool_names(runtime, "b") == ["get_item", "delete_item"]
    runtime.apply(snapshot(3, exposition("b", ["get_item"], prefix="x_")))
    assert set(runtime.routes.by_id) == {"b"}
    assert await tool_names(runtime, "b") == ["x_get_item"]


async def test_a_broken_exposition_is_skipped_and_its_previous_version_served(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, exposition("a", ["get_item"])))
    broken = exposition("a", ["get_item", "delete_item"])
    broken["members"][0]["credentials"] = {"kind": "mystery", "fields": {}, "values": {}}
    runtime.apply(snapshot(2, broken, exposition("b", [])))
    assert await tool_names(runtime, "a") == ["get_item"]  # the last version that worked
    assert "b" in runtime.routes.by_id
    with pytest.raises(ValueError, match="unknown credential kind 'mystery'"):
        runtime.apply(snapshot(3, broken), strict=True)


@pytest.mark.parametrize("missing", ["created_at", "members", "id"])
async def test_a_malformed_exposition_is_skipped_and_the_rest_of_the_snapshot_applied(
    runtime: GatewayRuntime, missing: str
) -> None:
    runtime.apply(snapshot(1, exposition("a", ["get_item"]), exposition("gone", ["get_item"]), exposition("bad", [])))
    served_before = await tool_names(runtime, "bad")
    bad = exposition("bad", ["get_item"])
    del bad[missing]
    runtime.apply(snapshot(2, exposition("a", ["get_item", "delete_item"]), bad))
    assert runtime.routes.revision == 2
    kept = {"a", "bad"} if missing != "id" else {"a"}  # an exposition it cannot name is not served
    assert set(runtime.routes.by_id) == kept
    assert "gone" not in runtime.routes.by_id
    assert await tool_names(runtime, "a") == ["get_item", "delete_item"]
    if missing != "id":
        assert await tool_names(runtime, "bad") == served_before != ["get_item"]  # its last version that worked
    with pytest.raises((KeyError, ValueError)):
        runtime.apply(snapshot(3, bad), strict=True)


async def test_service_coordinates_name_the_most_recent_exposition(runtime: GatewayRuntime) -> None:
    runtime.apply(snapshot(1, exposition("old", [], created="2026-01-01"), exposition("new", [], created="2026-02-01")))
    route, by_service = runtime.routes.resolve("/mcp/acme/Echo+API/2.1")
    assert route is not None and route.exposition_id == "new" and by_service
    assert runtime.routes.resolve("/mcp/acme/old")[0] is runtime.routes.by_id["old"]
    assert runtime.routes.resolve("/mcp/other/old") == (None, False)
    assert runtime.routes.resolve("/mcp/a/b/c/d") == (None, False)


async def test_the_version_url_leads_only_to_the_exposition_it_serves(runtime: GatewayRuntime) -> None:
    """Issue 21, M7: an exposition kept unchanged when a newer one of its service arrives no longer counts the
    version URL among its paths (the URLs its access tokens may name)."""
    old = exposition("old", [], created="2026-01-01")
    runtime.apply(snapshot(1, old))
    kept = runtime.routes.by_id["old"]
    assert runtime.routes.served["old"] == ("/mcp/acme/old", "/mcp/old", "/mcp/acme/Echo+API/2.1")
    runtime.apply(snapshot(2, old, exposition("new", [], created="2026-02-01")))
    assert runtime.routes.by_id["old"] is kept
    assert runtime.routes.served["old"] == ("/mcp/acme/old", "/mcp/old")
    assert runtime.routes.served["new"] == ("/mcp/acme/new", "/mcp/new", "/mcp/acme/Echo+API/2.1")


async def test_an_exposition_whose_secret_names_another_organization_s_variable_is_not_served(
    runtime: GatewayRuntime,
) -> None:
    foreign = exposition("e1", ["get_item"])
    foreign["members"][0]["credentials"] = [
        {"kind": "bearer", "fields": {}, "values": {"token": "${env:APIMCP_SECRET_globex__TOKEN}"}}
    ]
    with pytest.raises(ValueError, match="may name variables called APIMCP_SECRET_acme__"):
        runtime.apply(snapshot(1, foreign), strict=True)
    own = exposition("e1", ["get_item"])
    own["members"][0]["credentials"] = [
        {"kind": "bearer", "fields": {}, "values": {"token": "${env:APIMCP_SECRET_acme__TOKEN}"}}
    ]
    runtime.apply(snapshot(2, own), strict=True)
    assert "e1" in runtime.routes.by_id
