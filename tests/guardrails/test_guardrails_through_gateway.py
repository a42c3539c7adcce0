"""Guardrails through a gateway with the official client, on a backend that answers with what it was sent (so a
secret or personal data sent in reaches the answer): each action on answers and on arguments, code mode's inner
calls scanned as direct ones, resources read and prompts got scanned as answers are, and each finding audited by
kind and count, never its value."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from mcp import Client, MCPError, types

from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
AWS = "AKIAIOSFODNN7EXAMPLE"
CARD = "4111 1111 1111 1111"
ANSWERS = ["answers"]
CONFIG = f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5}}
  documented: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5, artifacts: [offerings.yaml, prompts.yaml]}}
expositions:
  reported:
    services: [echo]
    audit: true
    guardrails: [{{use: secrets, action: report}}, {{use: personal_data, action: report}}]
  redacted:
    services: [echo]
    guardrails: [{{use: secrets, action: redact, on: {ANSWERS}}}, {{use: personal_data, action: redact, on: {ANSWERS}}}]
  blocked:
    services: [echo]
    audit: true
    guardrails: [{{use: secrets, action: block, on: [arguments]}}, {{use: personal_data, action: block, on: {ANSWERS}}}]
  code:
    services: [echo]
    code_mode: on
    guardrails: [{{use: personal_data, action: redact, on: {ANSWERS}}}]
  docs_redacted:
    services: [documented]
    audit: true
    guardrails: [{{use: secrets, action: redact, on: {ANSWERS}}}, {{use: personal_data, action: redact}}]
  docs_blocked:
    services: [documented]
    guardrails: [{{use: secrets, action: block}}]
  docs_on_arguments_only:
    services: [documented]
    guardrails: [{{use: secrets, action: block, on: [arguments]}}]
"""
OFFERINGS = """
apiVersion: reshapr.io/v1alpha1
kind: Resources
service: {name: Echo API, version: "2.1"}
resources:
  note://contact:
    name: contact
    text: "Write to ada@example.com"
resourceTemplates:
  file:///notes/{note}:
    name: note
    mimeType: application/json
"""
PROMPTS = """
apiVersion: reshapr.io/v1alpha1
kind: Prompts
service: {name: Echo API, version: "2.1"}
prompts:
  deploy:
    arguments: [{name: key, required: true}]
    result: "Deploy with the key ${key}"
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("guardrails")
    (tmp / "offerings.yaml").write_text(OFFERINGS)
    (tmp / "prompts.yaml").write_text(PROMPTS)
    with live_echo_gateway(CONFIG, tmp) as base:
        yield base


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _call(url: str, mode: str, tool: str, arguments: dict[str, object]) -> types.CallToolResult:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("mode", MODES)
async def test_redact_hides_what_the_backend_answered(gateway: str, mode: str) -> None:
    sent = {"itemId": "1", "name": f"card {CARD}, key {AWS}, mail ada@example.com"}
    result = await _call(f"{gateway}/mcp/redacted", mode, "replace_item", sent)
    assert not result.is_error, result
    assert result.structured_content is not None
    body = json.loads(result.structured_content["body"])
    assert body["name"] == "card [redacted:payment_card], key [redacted:aws_access_key_id], mail [redacted:email]"
    assert CARD not in _text(result) and AWS not in _text(result) and "ada@example.com" not in _text(result)


@pytest.mark.parametrize("mode", MODES)
async def test_block_refuses_a_call_sending_a_secret_and_withholds_an_answer_with_personal_data(
    gateway: str, mode: str
) -> None:
    url = f"{gateway}/mcp/blocked"
    refused = await _call(url, mode, "replace_item", {"itemId": "1", "name": f"key {AWS}"})
    assert refused.is_error
    assert _text(refused) == (
        "The arguments of replace_item hold aws access key id: the call is refused by the guardrail 'secrets'"
    )
    withheld = await _call(url, mode, "replace_item", {"itemId": "1", "name": "mail ada@example.com"})
    assert withheld.is_error
    assert _text(withheld) == "The answer of replace_item was withheld: it holds email (guardrail 'personal_data')"
    fine = await _call(url, mode, "replace_item", {"itemId": "1", "name": "a plain box"})
    assert not fine.is_error


async def test_report_lets_everything_through_and_the_audit_says_what_was_found(
    gateway: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    sent = {"itemId": "1", "name": f"key {AWS}, cards {CARD} and 5500-0000-0000-0004"}
    result = await _call(f"{gateway}/mcp/reported", "legacy", "replace_item", sent)
    assert not result.is_error and AWS in _text(result)
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    found = [(e["guardrail"], e["in"], e["outcome"], e["findings"]) for e in events if e["action"] == "guardrail"]
    assert found == [
        ("secrets", "arguments", "reported", {"aws_access_key_id": 1}),
        ("personal_data", "arguments", "reported", {"payment_card": 2}),
        ("secrets", "answers", "reported", {"aws_access_key_id": 1}),
        ("personal_data", "answers", "reported", {"payment_card": 2}),
    ]
    assert AWS not in json.dumps(events) and CARD not in json.dumps(events)


@pytest.mark.parametrize("mode", MODES)
async def test_code_mode_s_inner_calls_are_scanned(gateway: str, mode: str) -> None:
    program = "const r = await tools.replace_item({itemId: '2', name: 'mail bob@example.org'});\nreturn r.body;"
    result = await _call(f"{gateway}/mcp/code", mode, "execute_code", {"code": program})
    assert not result.is_error, result
    assert "bob@example.org" not in _text(result) and "[redacted:email]" in _text(result)


async def _read(url: str, mode: str, uri: str) -> str:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        read = await client.read_resource(uri)
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


async def _prompt(url: str, mode: str, name: str, arguments: dict[str, str]) -> str:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        got = await client.get_prompt(name, arguments)
    [message] = got.messages
    assert isinstance(message.content, types.TextContent)
    return message.content.text


@pytest.mark.parametrize("mode", MODES)
async def test_resources_read_and_prompts_got_are_scanned_as_answers(gateway: str, mode: str) -> None:
    url = f"{gateway}/mcp/docs_redacted"
    assert await _read(url, mode, "note://contact") == "Write to [redacted:email]"
    from_backend = await _read(url, mode, f"file:///notes/{AWS}")  # the echo answers the path it was asked
    assert AWS not in from_backend and '"path": "/v1/notes/[redacted:aws_access_key_id]"' in from_backend
    assert await _prompt(url, mode, "deploy", {"key": AWS}) == "Deploy with the key [redacted:aws_access_key_id]"


@pytest.mark.parametrize("mode", MODES)
async def test_a_blocking_guardrail_refuses_a_read_or_a_prompt_holding_what_it_looks_for(
    gateway: str, mode: str
) -> None:
    url = f"{gateway}/mcp/docs_blocked"
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"file:///notes/{AWS}")
        assert "was withheld: it holds aws access key id (guardrail 'secrets')" in refused.value.message
        assert AWS not in refused.value.message
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("deploy", {"key": AWS})
        assert "The answer of deploy was withheld" in refused.value.message
        plain = await client.get_prompt("deploy", {"key": "blue"})
        assert isinstance(plain.messages[0].content, types.TextContent)
        assert plain.messages[0].content.text == "Deploy with the key blue"
    assert AWS in await _read(f"{gateway}/mcp/docs_on_arguments_only", mode, f"file:///notes/{AWS}")


async def test_what_a_read_holds_is_audited_as_in_a_resource(gateway: str, caplog: pytest.LogCaptureFixture) -> None:
    """The audit event names the resource, without what its URI holds that the guardrails look for (the finding:
    the event's target was the URI, key included, though the answer to the client leaves the URI out)."""
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    await _read(f"{gateway}/mcp/docs_redacted", "legacy", f"file:///notes/{AWS}")
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    found = [(e["target"], e["in"], e["outcome"], e["findings"]) for e in events if e["action"] == "guardrail"]
    assert found == [("file:///notes/[redacted:aws_access_key_id]", "resource", "redacted", {"aws_access_key_id": 1})]
    assert not any(AWS in json.dumps(e) for e in events if e["action"] == "guardrail")


@pytest.mark.parametrize("mode", MODES)
async def test_what_starts_a_line_is_blocked_and_redacted_too(gateway: str, mode: str) -> None:
    """The finding: a key or a card after a line break (`\\n` in the JSON searched) was let through by both actions,
    on arguments and on answers."""
    refused = await _call(f"{gateway}/mcp/blocked", mode, "replace_item", {"itemId": "1", "name": f"keys:\n{AWS}"})
    assert refused.is_error and "aws access key id" in _text(refused)
    withheld = await _call(f"{gateway}/mcp/blocked", mode, "replace_item", {"itemId": "1", "name": f"card:\n{CARD}"})
    assert withheld.is_error and "payment card" in _text(withheld)
    sent = {"itemId": "1", "name": f"keys:\n{AWS}\ncard:\n{CARD}"}
    result = await _call(f"{gateway}/mcp/redacted", mode, "replace_item", sent)
    assert result.structured_content is not None
    body = json.loads(result.structured_content["body"])
    assert body["name"] == "keys:\n[redacted:aws_access_key_id]\ncard:\n[redacted:payment_card]"
    assert AWS not in _text(result) and CARD not in _text(result)
