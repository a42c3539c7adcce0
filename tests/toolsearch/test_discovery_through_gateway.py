"""Progressive discovery through a gateway over HTTP, in both eras: an exposition of two services with tool
search lists search_tools, describe_tools and call_tool; search answers compact hits, narrowed by service,
tag or read-only; describe_tools gives full definitions; mistakes are tool errors that say what was wrong."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from apimcp.gateway.exposition import rest_paths
from tests.gateway.conftest import live_echo_gateway
from tests.support.mcp_http import McpHttp

PATH_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
JSON = "application/json"
TICKETS = {
    "openapi": "3.0.3",
    "info": {"title": "Tickets", "version": "1.0"},
    "paths": {
        "/tickets/{id}": {
            "get": {
                "operationId": "getTicket", "summary": "Get a ticket", "tags": ["tickets"],
                "description": "One ticket by its id, with its assignee.\n\nSee [the guide](https://docs.test/t).",
                "parameters": [PATH_ID, {"name": "verbose", "in": "query", "schema": {"type": "boolean"}}],
                "responses": {"200": {"description": "the ticket"}},
            },
            "delete": {
                "operationId": "deleteTicket", "summary": "Delete a ticket", "tags": ["tickets", "admin"],
                "parameters": [PATH_ID], "responses": {"204": {"description": "gone"}},
            },
        },
        "/tickets": {
            "post": {
                "operationId": "createTicket", "summary": "Open a ticket", "tags": ["tickets"],
                "requestBody": {"required": True, "content": {JSON: {"schema": {
                    "type": "object", "required": ["title"],
                    "properties": {"title": {"type": "string"}, "assignee": {"type": "string"}},
                }}}},
                "responses": {"201": {"description": "opened"}},
            },
        },
    },
}  # fmt: skip
BILLING = {
    "openapi": "3.0.3",
    "info": {"title": "Billing", "version": "1.0"},
    "paths": {
        "/invoices/{id}": {
            "get": {
                "operationId": "getInvoice", "summary": "Get an invoice", "tags": ["invoices"],
                "description": "An invoice and the money due on it.", "parameters": [PATH_ID],
                "responses": {"200": {"description": "the invoice", "content": {JSON: {"schema": {
                    "type": "object", "properties": {"total": {"type": "number"}},
                }}}}},
            },
        },
        "/invoices/{id}/void": {
            "post": {
                "operationId": "voidInvoice", "summary": "Void an invoice", "tags": ["invoices"],
                "parameters": [PATH_ID], "responses": {"204": {"description": "voided"}},
            },
        },
    },
}  # fmt: skip
EVERY_TOOL = {"get_ticket", "delete_ticket", "create_ticket", "get_invoice", "void_invoice"}

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("discovery")
    for name, spec in (("tickets", TICKETS), ("billing", BILLING)):
        (folder / f"{name}.json").write_bytes(orjson.dumps(spec))
    config = (
        "services:\n"
        '  tickets: {openapi: tickets.json, backend: "{backend}"}\n'
        '  billing: {openapi: billing.json, backend: "{backend}"}\n'
        "expositions:\n"
        "  desk: {services: [tickets, billing], tool_search: true}\n"
    )
    with live_echo_gateway(config, Path(folder)) as base:
        yield f"{base}/mcp/desk"


@pytest.fixture(params=["2026-07-28", "2025-11-25", "2025-03-26"])
def call(url: str, request: pytest.FixtureRequest) -> Iterator[Call]:
    """Calls a tool in one era (the stateless one, or a session of that version) and gives its result, whose
    JSON is read from its text where the revision has no structuredContent."""
    version: str = request.param
    with McpHttp(url) as mcp:
        session = mcp.initialize(version) if version != "2026-07-28" else None

        def calling(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            params = {"name": name, "arguments": arguments}
            reply = session.request("tools/call", params) if session else mcp.modern("tools/call", params)
            result: dict[str, Any] = reply.result
            if "structuredContent" not in result and not result.get("isError"):
                result["structuredContent"] = orjson.loads(result["content"][0]["text"])
            return result

        yield calling


def _hits(call: Call, **arguments: Any) -> list[dict[str, Any]]:
    result = call("search_tools", {"limit": 20, **arguments})
    assert not result.get("isError"), result
    hits: list[dict[str, Any]] = result["structuredContent"]["tools"]
    return hits


def _error(call: Call, name: str, arguments: dict[str, Any]) -> str:
    result = call(name, arguments)
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def test_the_listing_is_three_tools_and_search_offers_the_services(url: str) -> None:
    with McpHttp(url) as mcp:
        modern = mcp.modern("tools/list").result["tools"]
        legacy = mcp.initialize("2025-11-25").request("tools/list").result["tools"]
    for listed in (modern, legacy):
        assert [t["name"] for t in listed] == ["search_tools", "describe_tools", "call_tool"]
        search = listed[0]["inputSchema"]["properties"]
        assert search["service"]["enum"] == ["Tickets", "Billing"]
        assert search["readOnly"]["type"] == "boolean" and search["tag"]["type"] == "string"
        assert listed[1]["inputSchema"]["required"] == ["names"]


def test_search_answers_compact_hits(call: Call) -> None:
    hits = _hits(call, query="get a ticket")
    assert hits[0] == {
        "name": "get_ticket",
        "title": "Get a ticket",
        "summary": "One ticket by its id, with its assignee.",
        "parameters": ["id*", "verbose"],
    }
    opened = next(hit for hit in _hits(call, query="open a ticket") if hit["name"] == "create_ticket")
    assert opened["parameters"] == ["title*", "assignee"]
    assert all("inputSchema" not in hit and "description" not in hit for hit in hits)


def test_search_keeps_to_a_service_a_tag_or_read_only_tools(call: Call) -> None:
    query = "ticket invoice get delete open void"
    assert {hit["name"] for hit in _hits(call, query=query)} == EVERY_TOOL
    assert {hit["name"] for hit in _hits(call, query=query, service="Billing")} == {"get_invoice", "void_invoice"}
    assert {hit["name"] for hit in _hits(call, query=query, readOnly=True)} == {"get_ticket", "get_invoice"}
    assert {hit["name"] for hit in _hits(call, query=query, tag="admin")} == {"delete_ticket"}
    assert _hits(call, query=query, service="Billing", tag="tickets") == []


def test_bad_filters_are_tool_errors_naming_what_is_known(call: Call) -> None:
    assert "its services: Tickets, Billing" in _error(call, "search_tools", {"query": "x", "service": "Shop"})
    assert "tags: admin, invoices, tickets" in _error(call, "search_tools", {"query": "x", "tag": "nope"})
    assert '"readOnly" must be true' in _error(call, "search_tools", {"query": "x", "readOnly": "yes"})


def test_describe_gives_full_definitions_and_names_unknown_tools(call: Call) -> None:
    described = call("describe_tools", {"names": ["get_invoice", "create_ticket"]})["structuredContent"]["tools"]
    invoice, ticket = described
    assert invoice["name"] == "get_invoice" and invoice["title"] == "Get an invoice"
    assert invoice["description"] == "Get an invoice\n\nAn invoice and the money due on it."  # as imported
    assert invoice["inputSchema"]["required"] == ["id"]
    assert invoice["outputSchema"]["properties"]["total"] == {"type": "number"}
    assert invoice["annotations"]["readOnlyHint"] is True
    assert ticket["inputSchema"]["properties"]["title"] == {"type": "string"}
    assert ticket["annotations"]["readOnlyHint"] is False
    unknown = _error(call, "describe_tools", {"names": ["get_invoice", "no_such_tool"]})
    assert unknown.startswith("Unknown tools: no_such_tool")
    assert '"names" must be a list' in _error(call, "describe_tools", {"names": "get_invoice"})
    called = call("call_tool", {"name": "get_ticket", "arguments": {"id": "7"}})
    assert '"path":"/v1/tickets/7"' in called["content"][0]["text"].replace(" ", "")


def test_an_exposition_ranks_each_rest_path_once_as_the_discovery_report_does() -> None:
    """The finding: the aliases hold `GET /x` and its signature key `get /x`, and both were given to the index as
    paths: path words weighed twice what the discovery report's index gave them."""
    aliases = {"GET /tickets/{id}": "get_ticket", "get /tickets/{id}": "get_ticket", "getTicket": "get_ticket",
               "POST /tickets": "create_ticket", "post /tickets": "create_ticket"}  # fmt: skip
    assert rest_paths(aliases) == {"get_ticket": ["GET /tickets/{id}"], "create_ticket": ["POST /tickets"]}
