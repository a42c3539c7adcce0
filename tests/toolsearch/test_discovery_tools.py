"""search_tools narrowed by service, tag and read-only, and describe_tools, as functions: what they answer,
what they refuse and how, and that a tool the caller may not call is never told apart from one that does
not exist."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apimcp.protocol.models import CallToolResult, Tool, ToolAnnotations
from apimcp.toolsearch.describe import MAX_NAMES, describe_result
from apimcp.toolsearch.errors import ToolSearchError
from apimcp.toolsearch.facets import Facets
from apimcp.toolsearch.index import ToolIndex
from apimcp.toolsearch.tools import SEARCH_PAGE, search_page, search_result

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True)
ID = {"type": "object", "properties": {"id": {"type": "string"}, "verbose": {}}, "required": ["id"]}
OUT = {"type": "object", "properties": {"total": {"type": "number"}}}
TOOLS = [
    Tool(name="tickets_get", title="Get a ticket", description="One ticket, by id.", input_schema=ID, annotations=READ),
    Tool(name="tickets_delete", description="Delete a ticket for good.", input_schema=ID, annotations=WRITE),
    Tool(name="tickets_list", description="Every ticket of a project.", input_schema=ID, annotations=READ),
    Tool(name="invoices_get", description="One invoice with its total.", input_schema=ID, output_schema=OUT,
         annotations=READ),
    Tool(name="invoices_void", description="Void an invoice: its ticket is reopened.", input_schema=ID),
]  # fmt: skip
SERVICES = {"tickets_get": "Tickets", "tickets_delete": "Tickets", "tickets_list": "Tickets",
            "invoices_get": "Billing", "invoices_void": "Billing"}  # fmt: skip
TAGS = {"tickets_get": ["Tickets"], "tickets_delete": ["Tickets", "Admin"], "tickets_list": ["Tickets"],
        "invoices_get": ["Invoices"], "invoices_void": ["Invoices"]}  # fmt: skip
INDEX = ToolIndex(TOOLS)
FACETS = Facets.of(TOOLS, SERVICES, TAGS)
NOT_ADMIN = frozenset(n for n in SERVICES if n != "tickets_delete")


def _names(arguments: dict[str, Any], allowed: frozenset[str] | None = None) -> list[str]:
    result = search_result(INDEX, {"query": "ticket invoice", "limit": 20, **arguments}, allowed, FACETS)
    return [hit["name"] for hit in result.structured_content["tools"]]


def _refused(call: Any, *args: Any) -> str:
    with pytest.raises(ToolSearchError) as refused:
        call(*args)
    return str(refused.value)


def test_hits_are_compact() -> None:
    result = search_result(INDEX, {"query": "get a ticket", "limit": 1}, None, FACETS)
    assert result.structured_content == {
        "tools": [{"name": "tickets_get", "title": "Get a ticket", "summary": "One ticket, by id.",
                   "parameters": ["id*", "verbose"]}]
    }  # fmt: skip
    assert orjson.loads(result.content[0].text) == result.structured_content  # for clients before 2025-06-18


def test_filters_keep_to_a_service_a_tag_or_read_only_tools() -> None:
    assert set(_names({})) == set(SERVICES)
    assert set(_names({"service": "Billing"})) == {"invoices_get", "invoices_void"}
    assert set(_names({"service": "billing"})) == {"invoices_get", "invoices_void"}  # case does not matter
    assert set(_names({"tag": "admin"})) == {"tickets_delete"}
    assert set(_names({"readOnly": True})) == {"tickets_get", "tickets_list", "invoices_get"}  # unannotated: no
    assert set(_names({"readOnly": False})) == set(SERVICES)  # false restricts nothing
    assert set(_names({"service": "Tickets", "readOnly": True, "tag": "tickets"})) == {"tickets_get", "tickets_list"}
    assert _names({"service": "Billing", "tag": "Admin"}) == []
    assert set(_names({"service": "Tickets"}, NOT_ADMIN)) == {"tickets_get", "tickets_list"}  # scopes still apply


def test_bad_filters_are_named_with_what_is_known() -> None:
    assert _refused(_names, {"service": "Shop"}) == (
        "\"service\" names no service of this server: 'Shop'; its services: Tickets, Billing"
    )
    assert _refused(_names, {"tag": "nope"}) == "no tool has the tag 'nope'; tags: Admin, Invoices, Tickets"
    assert '"readOnly" must be true' in _refused(_names, {"readOnly": "yes"})
    assert '"service" must be a string' in _refused(_names, {"service": 3})
    assert '"tag" must be a string' in _refused(_names, {"tag": ""})
    assert '"tag" must be a string' in _refused(_names, {"tag": "x" * 1000})


def test_a_tag_only_forbidden_tools_carry_is_refused_as_an_unknown_one() -> None:
    hidden = _refused(_names, {"tag": "Admin"}, NOT_ADMIN)
    assert hidden == "no tool has the tag 'Admin'; tags: Invoices, Tickets"
    assert _refused(_names, {"tag": "Nope"}, NOT_ADMIN) == hidden.replace("Admin", "Nope")


def test_a_service_none_of_whose_tools_the_caller_may_call_is_not_named_to_it() -> None:
    tickets_only = frozenset({"tickets_get", "tickets_list"})
    hidden = _refused(_names, {"service": "Billing"}, tickets_only)
    assert hidden == "\"service\" names no service of this server: 'Billing'; its services: Tickets"
    assert _refused(_names, {"service": "Shop"}, tickets_only) == hidden.replace("Billing", "Shop")


def test_describe_gives_full_definitions_in_the_order_asked() -> None:
    result = describe_result(INDEX.tools, {"names": ["invoices_get", "tickets_get", "invoices_get"]}, None)
    assert isinstance(result, CallToolResult)
    assert result.structured_content == {
        "tools": [
            {"name": "invoices_get", "description": "One invoice with its total.", "inputSchema": ID,
             "outputSchema": OUT, "annotations": {"readOnlyHint": True, "destructiveHint": False}},
            {"name": "tickets_get", "title": "Get a ticket", "description": "One ticket, by id.", "inputSchema": ID,
             "annotations": {"readOnlyHint": True, "destructiveHint": False}},
        ]
    }  # fmt: skip
    assert '"outputSchema"' in result.content[0].text


def test_describe_names_the_unknown_tools_and_a_forbidden_one_is_unknown() -> None:
    unknown = _refused(describe_result, INDEX.tools, {"names": ["tickets_get", "nope", "search_tools"]}, None)
    assert unknown == "Unknown tools: nope, search_tools (search_tools finds this server's tools)"
    forbidden = _refused(describe_result, INDEX.tools, {"names": ["tickets_delete"]}, NOT_ADMIN)
    missing = _refused(describe_result, INDEX.tools, {"names": ["tickets_gone"]}, NOT_ADMIN)
    assert forbidden == missing.replace("tickets_gone", "tickets_delete")
    described = describe_result(INDEX.tools, {"names": ["tickets_get"]}, NOT_ADMIN).structured_content
    assert [t["name"] for t in described["tools"]] == ["tickets_get"]


@pytest.mark.parametrize(
    "names",
    [None, "tickets_get", [], ["tickets_get"] * (MAX_NAMES + 1), [3], [""], ["x" * 129], {"name": "tickets_get"}],
)
def test_describe_refuses_what_is_not_a_short_list_of_names(names: object) -> None:
    arguments = {} if names is None else {"names": names}
    assert _refused(describe_result, INDEX.tools, arguments, None) == (
        f'"names" must be a list of 1 to {MAX_NAMES} tool names (strings of 1 to 128 characters)'
    )


def test_several_services_make_search_tools_offer_a_choice_of_them() -> None:
    assert search_page(["Only"]) is SEARCH_PAGE
    assert "service" not in SEARCH_PAGE.items[0].input_schema["properties"]
    assert [t.name for t in SEARCH_PAGE.items] == ["search_tools", "describe_tools", "call_tool"]
    several = search_page(["Tickets", "Billing"]).items[0].input_schema["properties"]
    assert several["service"]["enum"] == ["Tickets", "Billing"]
    assert {"query", "limit", "readOnly", "tag"} <= set(several)


def test_a_service_or_tag_longer_than_the_usual_bound_is_still_one_to_filter_on() -> None:
    """The finding: a service name of 243 characters was listed in the filter's enum and refused as its value."""
    long_service, long_tag = "Service " + "x" * 235, "Tag " + "y" * 230
    facets = Facets.of(TOOLS, {**SERVICES, "tickets_get": long_service}, {**TAGS, "tickets_get": [long_tag]})
    assert facets.narrowed({"service": long_service}, None) == {"tickets_get"}
    assert facets.narrowed({"tag": long_tag}, None) == {"tickets_get"}
    assert "of 1 to 243 characters" in _refused(facets.narrowed, {"service": "z" * 244}, None)
    assert "of 1 to 200 characters" in _refused(FACETS.narrowed, {"service": "z" * 201}, None)
    bare = Facets.of(TOOLS, {}, {})  # no service, no tag: the bound is the usual one
    assert "names no service" in _refused(bare.narrowed, {"service": "z"}, None)
    assert "of 1 to 200 characters" in _refused(bare.narrowed, {"tag": "z" * 201}, None)
