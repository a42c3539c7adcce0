"""Policies behind a real authorization server, with the official client in both eras: the claims of the caller's
token and the values of its arguments decide each call, listings and search show only what may be called,
code mode's inner calls and a script's are bound by the same rules, answers are redacted for whom a rule says,
and each denial is audited with the rule's name."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.auth.conftest import ECHO_SPEC
from tests.gateway.conftest import live_echo_gateway
from tests.support.idp import Idp, client, running_idp

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
CLAIMS: dict[str, dict[str, Any]] = {
    "contractor": {"groups": ["contractors"], "region": "us"},
    "staff": {"groups": ["staff"], "region": "eu"},
    "partner": {"groups": [], "partner": True, "region": "eu"},
}
SECRET = "policy-client-secret-0123456789"
READ_ONLY = {"name": "contractors-read-only", "when": '"contractors" in claims.groups && !tool.read_only',
             "effect": "deny", "message": "Contractors may only read."}  # fmt: skip
EU_ONLY = {"name": "eu-items-for-eu", "when": 'claims.region != "eu" && args.itemId.startsWith("eu-")',
           "effect": "deny"}  # fmt: skip
PARTNER = {"name": "partners-see-no-headers", "when": "has(claims.partner) && claims.partner", "effect": "redact",
           "fields": ["headers", "header_digests"]}  # fmt: skip
NO_RAW = {"name": "organization-no-raw", "when": 'tool.path == "/raw"', "effect": "deny"}


def _config(issuer: str, tmp: Path) -> str:
    script = tmp / "artifacts.yaml"
    script.write_text(
        'apiVersion: reshapr.io/v1alpha1\nkind: CustomTools\nservice: {name: Echo API, version: "2.1"}\n'
        "customTools:\n  drop_item:\n    description: Deletes an item by a script\n"
        "    input: {type: object, properties: {itemId: {type: string}}, required: [itemId]}\n"
        "    tools: [{tool: delete_item}]\n    script: |\n"
        "      const r = rs.callTool('delete_item', {itemId: input.itemId});\n"
        "      if (!r.ok) throw new Error(r.error.message);\n      return r.content;\n"
    )
    filters = tmp / "filters.yaml"  # TOON: text of the filter's own, which the redaction cannot read afterwards
    filters.write_text(
        'apiVersion: reshapr.io/v1alpha1\nkind: ToolsOutputFilters\nservice: {name: Echo API, version: "2.1"}\n'
        "filters:\n  query_styles: {convertToToon: true}\n"
    )
    auth = f'auth: {{oauth: {{issuers: ["{issuer}"]}}}}'
    rules = json.dumps([READ_ONLY, EU_ONLY, PARTNER])
    return f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5, artifacts: [{script}, {filters}]}}
policies: {json.dumps([NO_RAW])}
expositions:
  books: {{services: [echo], audit: true, {auth}, policies: {rules}}}
  code: {{services: [echo], code_mode: on, {auth}, policies: {rules}}}
  search: {{services: [echo], tool_search: true, {auth}, policies: {rules}}}
server:
  fetch_allow: [127.0.0.1]
"""


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    clients = [client(name, SECRET, grants=["client_credentials"]) for name in CLAIMS]
    with running_idp(clients, claims=CLAIMS) as provider:
        yield provider


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("policies")
    with live_echo_gateway(_config(idp.issuer, tmp), tmp) as base:
        yield base


def _client(idp: Idp, url: str, who: str, mode: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {idp.token(who, url)}"}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), mode=mode)


def _text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("mode", MODES)
async def test_the_token_s_claims_decide_what_is_listed_and_called(gateway: str, idp: Idp, mode: str) -> None:
    url = f"{gateway}/mcp/books"
    http, contractor = _client(idp, url, "contractor", mode)
    async with http, contractor:
        listed = {tool.name for tool in (await contractor.list_tools()).tools}
        assert {"get_item", "query_styles"} <= listed
        assert not listed & {"delete_item", "replace_item", "drop_item", "post_raw"}
        denied = await contractor.call_tool("delete_item", {"itemId": "1"})
        assert denied.is_error
        assert _text(denied) == (
            "Calling delete_item is denied by the policy rule 'contractors-read-only': Contractors may only read."
        )
        read = await contractor.call_tool("get_item", {"itemId": "1"})
        assert not read.is_error and read.structured_content is not None
        assert read.structured_content["path"] == "/v1/items/1"
    http, staff = _client(idp, url, "staff", mode)
    async with http, staff:
        listed = {tool.name for tool in (await staff.list_tools()).tools}
        assert {"delete_item", "replace_item", "drop_item"} <= listed and "post_raw" not in listed  # the organization's
        deleted = await staff.call_tool("delete_item", {"itemId": "1"})
        assert not deleted.is_error and deleted.structured_content["method"] == "DELETE"


@pytest.mark.parametrize("mode", MODES)
async def test_argument_values_decide(gateway: str, idp: Idp, mode: str) -> None:
    url = f"{gateway}/mcp/books"
    http, contractor = _client(idp, url, "contractor", mode)
    async with http, contractor:
        denied = await contractor.call_tool("get_item", {"itemId": "eu-7"})
        assert _text(denied) == "Calling get_item is denied by the policy rule 'eu-items-for-eu'"
        assert not (await contractor.call_tool("get_item", {"itemId": "us-7"})).is_error
    http, staff = _client(idp, url, "staff", mode)
    async with http, staff:
        assert not (await staff.call_tool("get_item", {"itemId": "eu-7"})).is_error


@pytest.mark.parametrize("mode", MODES)
async def test_answers_are_redacted_for_whom_a_rule_says(gateway: str, idp: Idp, mode: str) -> None:
    url = f"{gateway}/mcp/books"
    http, partner = _client(idp, url, "partner", mode)
    async with http, partner:
        tools = {tool.name: tool for tool in (await partner.list_tools()).tools}
        assert tools["get_item"].output_schema is not None
        read = await partner.call_tool("get_item", {"itemId": "1"})  # the client checks it against the schema
        assert not read.is_error, read
        assert read.structured_content is not None
        assert read.structured_content["headers"] == "[redacted]"
        assert read.structured_content["header_digests"] == "[redacted]"
        assert json.loads(_text(read))["headers"] == "[redacted]"
        assert read.structured_content["path"] == "/v1/items/1"
        # The finding: a filter writing TOON wrote the fields out in its text, where the redaction could not see
        # them; now the answer is redacted before the filter
        toon = _text(await partner.call_tool("query_styles", {"reserved": "x"}))
        assert 'headers: "[redacted]"' in toon and "accept:" not in toon.lower(), toon
    http, staff = _client(idp, url, "staff", mode)
    async with http, staff:
        read = await staff.call_tool("get_item", {"itemId": "1"})
        assert isinstance(read.structured_content["headers"], dict)
        assert "accept: application/json" in _text(await staff.call_tool("query_styles", {"reserved": "x"})).lower()


@pytest.mark.parametrize("mode", MODES)
async def test_code_mode_search_and_scripts_are_bound_by_the_same_rules(gateway: str, idp: Idp, mode: str) -> None:
    url = f"{gateway}/mcp/code"
    http, contractor = _client(idp, url, "contractor", mode)
    async with http, contractor:
        program = "const read = await tools.get_item({itemId: '1'});\n\nawait tools.delete_item({itemId: '1'});"
        result = await contractor.call_tool("execute_code", {"code": program})
        assert result.is_error
        assert _text(result) == (
            "The program failed at line 3: tools.delete_item failed: Calling delete_item is denied by the policy "
            "rule 'contractors-read-only': Contractors may only read."
        )
        found = await contractor.call_tool("search_tools", {"query": "delete an item", "limit": 20})
        assert found.structured_content is not None
        assert "delete_item" not in [hit["name"] for hit in found.structured_content["tools"]]
        described = await contractor.call_tool("describe_tools", {"names": ["delete_item"]})
        assert described.is_error
        assert _text(described) == "Unknown tools: delete_item (search_tools finds this server's tools)"
    http, staff = _client(idp, f"{gateway}/mcp/search", "staff", mode)
    async with http, staff:
        script = await staff.call_tool("call_tool", {"name": "drop_item", "arguments": {"itemId": "2"}})
        assert not script.is_error, script
    http, contractor = _client(idp, f"{gateway}/mcp/search", "contractor", mode)
    async with http, contractor:
        refused = await contractor.call_tool("call_tool", {"name": "drop_item", "arguments": {"itemId": "2"}})
        assert _text(refused).startswith("Calling drop_item is denied by the policy rule 'contractors-read-only'")


async def test_a_script_s_inner_call_is_decided_by_the_rules_too(gateway: str, idp: Idp) -> None:
    """A rule on the operation a script calls binds the script, whatever the custom tool is named."""
    url = f"{gateway}/mcp/books"
    http, partner = _client(idp, url, "partner", "legacy")
    async with http, partner:
        result = await partner.call_tool("drop_item", {"itemId": "eu-3"})  # partner: region eu, not a contractor
        assert not result.is_error, result


async def test_a_denial_is_audited_with_the_rule_s_name(
    gateway: str, idp: Idp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    url = f"{gateway}/mcp/books"
    http, contractor = _client(idp, url, "contractor", "2026-07-28")
    async with http, contractor:
        await contractor.call_tool("delete_item", {"itemId": "9"})
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    (denial,) = [event for event in events if event["action"] == "policy"]
    assert denial["rule"] == "contractors-read-only" and denial["target"] == "delete_item"
    assert denial["outcome"] == "denied" and denial["status"] == 403
    assert denial["user"].endswith("client=contractor") or "contractor" in denial["user"]
