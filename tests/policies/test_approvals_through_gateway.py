"""Human approval with the official client in both eras: a call an `approve` rule holds shows the tool and its
arguments in a form, goes on when approved, not when refused, nor when the answer comes too late; a 2026-07-28
answer holds for the call it was asked about only (not another's arguments, not volunteered before the
question); a client that cannot show a form is told the call needs approval; code mode's inner calls ask too;
each outcome is audited."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest
from mcp import Client, types
from mcp.client.context import ClientRequestContext

from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway
from tests.support.mcp_http import McpHttp

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
RULES = [
    {"name": "deletes-need-approval", "when": 'tool.method == "DELETE"', "effect": "approve",
     "message": "Deleting cannot be undone.", "approval_seconds": 2},
    {"name": "replaces-need-approval", "when": 'tool.name == "replace_item"', "effect": "approve"},
]  # fmt: skip
CONFIG = f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5}}
expositions:
  echo: {{services: [echo], audit: true, policies: {json.dumps(RULES)}}}
  code: {{services: [echo], code_mode: on, policies: {json.dumps(RULES)}}}
"""
DELETE_QUESTION = 'Approve delete_item with itemId="3"? Deleting cannot be undone.'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_echo_gateway(CONFIG, tmp_path_factory.mktemp("approvals")) as base:
        yield base


class Person:
    """Answers each form as told, after `delay` seconds, and remembers the questions."""

    def __init__(self, approve: bool | None, delay: float = 0.0) -> None:
        self.approve = approve
        self.delay = delay
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams), params
        self.asked.append(params.message)
        assert list(params.requested_schema["properties"]) == ["approve"]
        await asyncio.sleep(self.delay)
        if self.approve is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": self.approve})


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
async def test_an_approved_call_goes_on_and_a_refused_one_does_not(gateway: str, mode: str) -> None:
    person = Person(approve=True)
    async with Client(f"{gateway}/mcp/echo", mode=mode, elicitation_callback=person) as client:  # type: ignore[arg-type]
        done = await client.call_tool("delete_item", {"itemId": "3"})
        assert not done.is_error, done
        assert done.structured_content is not None and done.structured_content["method"] == "DELETE"
        assert person.asked == [DELETE_QUESTION]
        read = await client.call_tool("get_item", {"itemId": "3"})  # no rule: not asked
        assert not read.is_error and len(person.asked) == 1
    for answer, told in ((False, "Calling delete_item was not approved"), (None, "Calling delete_item was not "
                                                                                  "approved")):  # fmt: skip
        refusing = Person(approve=answer)
        async with Client(f"{gateway}/mcp/echo", mode=mode, elicitation_callback=refusing) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("delete_item", {"itemId": "3"})
            assert refused.is_error and _text(refused) == told


@pytest.mark.parametrize("mode", MODES)
async def test_an_answer_that_comes_too_late_is_refused(gateway: str, mode: str) -> None:
    slow = Person(approve=True, delay=2.5)  # the rule takes answers for 2 s
    async with Client(f"{gateway}/mcp/echo", mode=mode, elicitation_callback=slow) as client:  # type: ignore[arg-type]
        late = await client.call_tool("delete_item", {"itemId": "4"})
    assert late.is_error
    assert _text(late) == "The approval of delete_item came after 2 s, too late: call it again"


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_show_a_form_is_told_approval_is_needed(gateway: str, mode: str) -> None:
    async with Client(f"{gateway}/mcp/echo", mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("replace_item", {"itemId": "1", "body": {"a": 1}})
    assert result.is_error
    assert _text(result).startswith("Calling replace_item needs a person's approval, and this client cannot ask for it")


def test_a_2026_answer_holds_for_the_call_it_was_asked_about_only(gateway: str) -> None:
    capabilities = {"elicitation": {"form": {}}}
    with McpHttp(f"{gateway}/mcp/echo") as mcp:
        asked = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "5"}},
                           capabilities=capabilities)  # fmt: skip
        assert asked.result["resultType"] == "input_required"
        [(key, question)] = asked.result["inputRequests"].items()
        assert question["params"]["message"] == 'Approve delete_item with itemId="5"? Deleting cannot be undone.'
        yes = {key: {"action": "accept", "content": {"approve": True}}}
        state = asked.result["requestState"]
        other = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "6"}, "requestState": state,
                                          "inputResponses": yes}, capabilities=capabilities)  # fmt: skip
        assert other.error is not None and "requestState" in other.error["message"]  # bound to the arguments
        volunteered = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "5"},
                                                "inputResponses": yes}, capabilities=capabilities)  # fmt: skip
        assert volunteered.result["resultType"] == "input_required"  # asked anyway: the key is new
        assert list(volunteered.result["inputRequests"]) != [key]
        done = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "5"}, "requestState": state,
                                         "inputResponses": yes}, capabilities=capabilities)  # fmt: skip
        assert done.result["structuredContent"]["path"] == "/v1/items/5"


@pytest.mark.parametrize("mode", MODES)
async def test_code_mode_s_inner_calls_ask_too(gateway: str, mode: str) -> None:
    person = Person(approve=True)
    program = "const read = await tools.get_item({itemId: '8'});\nreturn await tools.delete_item({itemId: '8'});"
    async with Client(f"{gateway}/mcp/code", mode=mode, elicitation_callback=person) as client:  # type: ignore[arg-type]
        done = await client.call_tool("execute_code", {"code": program})
    assert not done.is_error, done
    assert done.structured_content is not None and done.structured_content["method"] == "DELETE"
    assert person.asked[-1] == 'Approve delete_item with itemId="8"? Deleting cannot be undone.'
    refusing = Person(approve=False)
    async with Client(f"{gateway}/mcp/code", mode=mode, elicitation_callback=refusing) as client:  # type: ignore[arg-type]
        refused = await client.call_tool("execute_code", {"code": program})
    assert refused.is_error
    assert _text(refused) == (
        "The program failed at line 2: tools.delete_item failed: Calling delete_item was not approved"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_program_making_the_same_call_again_is_asked_again(gateway: str, mode: str) -> None:
    """An approval holds for one call: a loop of three identical replaces is three questions, not one."""
    person = Person(approve=True)
    program = ("let done = 0;\nfor (let i = 0; i < 3; i++) { await tools.replace_item({itemId: '5', name: 'x'}); "
               "done++; }\nreturn {done};")  # fmt: skip
    async with Client(f"{gateway}/mcp/code", mode=mode, elicitation_callback=person) as client:  # type: ignore[arg-type]
        done = await client.call_tool("execute_code", {"code": program})
    assert not done.is_error, done
    assert done.structured_content == {"done": 3}
    assert person.asked == ['Approve replace_item with itemId="5", name="x"?'] * 3


async def test_each_outcome_is_audited(gateway: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    for approve in (True, False):
        async with Client(f"{gateway}/mcp/echo", mode="legacy", elicitation_callback=Person(approve)) as client:
            await client.call_tool("delete_item", {"itemId": "9"})
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    approvals = [(e["target"], e["outcome"], e["rule"]) for e in events if e["action"] == "approval"]
    assert approvals == [("delete_item", "approved", "deletes-need-approval"),
                         ("delete_item", "refused", "deletes-need-approval")]  # fmt: skip
