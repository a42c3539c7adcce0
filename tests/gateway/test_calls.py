"""Every tool call takes its exposition's call path: a script's calls are rate-limited, audited and observed
like a client's, by the exposition whose tool they call; a client's call is counted once."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import orjson
import pytest

from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.spans import CLIENT, INTERNAL, SERVER
from apimcp.telemetry.tracing import Tracing
from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway
from tests.support.mcp_http import McpHttp
from tests.telemetry.test_span_path import Kept

FAN_OUT = """
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: front, version: "2.1"}
customTools:
  fan_out:
    description: reads ten items of the back service
    input: {type: object}
    tools: [{tool: get_item, service: "back:2.1"}]
    script: |
      const seen = [];
      for (let i = 0; i < 10; i++) {
        const read = rs.callTool("back:2.1", "get_item", {itemId: String(i)});
        seen.push(read.ok ? "read" : read.error.message);
      }
      return seen;
  own_fan_out:
    description: reads ten items of its own service
    input: {type: object}
    tools: [{tool: get_item}]
    script: |
      const seen = [];
      for (let i = 0; i < 10; i++) {
        const read = rs.callTool("get_item", {itemId: String(i)});
        seen.push(read.ok ? "read" : read.error.code);
      }
      return seen;
"""


def _config(back_limit: str, front_limit: str | None = None, back_whose: str = "exposition") -> str:
    front = f", rate_limit: {{exposition: {front_limit}}}" if front_limit else ""
    return f"""
services:
  front: {{openapi: {ECHO_SPEC}, name: front, backend: "{{backend}}", artifacts: [fan-out.yaml]}}
  back: {{openapi: {ECHO_SPEC}, name: back, backend: "{{backend}}"}}
expositions:
  front: {{services: [front], audit: true{front}}}
  back: {{services: [back], audit: true, rate_limit: {{{back_whose}: {back_limit}}}}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "fan-out.yaml").write_text(FAN_OUT)
    return tmp_path


def _call(base: str, exposition: str, tool: str, arguments: dict[str, Any]) -> Any:
    with McpHttp(f"{base}/mcp/{exposition}") as mcp:
        return mcp.modern("tools/call", {"name": tool, "arguments": arguments})


def _audited(caplog: pytest.LogCaptureFixture, exposition: str) -> list[dict[str, Any]]:
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    return [event for event in events if event["exposition"] == exposition]


@pytest.fixture
def audit_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    return caplog


def test_a_script_s_calls_into_another_service_take_its_rate_limit_and_audit(
    folder: Path, audit_log: pytest.LogCaptureFixture
) -> None:
    # Finding M2 of issue 21: a plan limited to 2/min served 10 backend calls from one script call while direct
    # calls got 429.
    with live_echo_gateway(_config("2/min"), folder) as base:
        reply = _call(base, "front", "fan_out", {})
        direct = _call(base, "back", "get_item", {"itemId": "1"})
    refused = "Rate limit of exposition 'back' reached (all its callers together): try again in 30 s"
    assert orjson.loads(reply.result["content"][0]["text"]) == ["read", "read"] + [refused] * 8
    assert direct.status == 429  # the script spent the exposition's allowance
    back = _audited(audit_log, "back")
    inner = [event for event in back if "via" in event]
    assert [(e["action"], e["reason"]) for e in back if "via" not in e] == [("rate_limit", "exposition_rate_limit")]
    assert len(inner) == 10
    assert [(e["action"], e["target"], e["outcome"], e["error_code"]) for e in inner] == [
        ("tools/call", "get_item", "success", None)
    ] * 2 + [("tools/call", "get_item", "refused", None)] * 8
    for event in inner:
        assert event["via"] == {"tool": "fan_out", "exposition_id": "front", "exposition": "front"}
        assert event["client"] == "127.0.0.1"  # on whose behalf: the script's caller
        assert event["service"] == "back"
    (outer,) = _audited(audit_log, "front")  # the client's own call: one event, no via
    assert (outer["target"], outer["outcome"]) == ("fan_out", "success") and "via" not in outer


def test_a_script_s_calls_into_its_own_exposition_count_after_the_call_that_ran_it(
    folder: Path, audit_log: pytest.LogCaptureFixture
) -> None:
    with live_echo_gateway(_config("100/min", front_limit="3/min"), folder) as base:
        reply = _call(base, "front", "own_fan_out", {})
        direct = _call(base, "front", "get_item", {"itemId": "1"})
    # the client's call took one token (once: at the door), the script's first two calls the others
    assert orjson.loads(reply.result["content"][0]["text"]) == ["read", "read"] + [-32000] * 8
    assert direct.status == 429
    events = _audited(audit_log, "front")
    inner = [event for event in events if "via" in event]
    assert [event["outcome"] for event in inner] == ["success"] * 2 + ["refused"] * 8
    assert {event["via"]["tool"] for event in inner} == {"own_fan_out"}
    assert [(event["target"], event["outcome"]) for event in events if "via" not in event] == [
        ("own_fan_out", "success"),
        ("/mcp/front", "refused"),  # the direct call, refused 429 at the door
    ]


def test_a_script_s_call_refused_by_a_rate_limit_is_audited_as_refused_like_the_door_s_429(
    folder: Path, audit_log: pytest.LogCaptureFixture
) -> None:
    """Finding: a script's inner call beyond a rate limit was audited as an error (-32000), not refused, and its
    message blamed the exposition's limit when it was the caller's own."""
    with live_echo_gateway(_config("2/min", back_whose="caller"), folder) as base:
        reply = _call(base, "front", "fan_out", {})
        direct = _call(base, "back", "get_item", {"itemId": "1"})
    told = "Rate limit per caller of exposition 'back' reached: try again in 30 s"
    assert orjson.loads(reply.result["content"][0]["text"]) == ["read", "read"] + [told] * 8
    assert direct.status == 429  # the script spent this caller's allowance; the door says so in the same words
    assert direct.error == {"code": -32000, "message": told, "data": {"retryAfter": 30, "reason": "caller_rate_limit"}}
    back = _audited(audit_log, "back")
    inner = [event for event in back if "via" in event]
    (at_the_door,) = [event for event in back if "via" not in event]
    fields = ("outcome", "status", "reason", "retry_after")
    refused = [{key: event.get(key) for key in fields} for event in inner[2:]]
    assert refused == [{key: at_the_door[key] for key in fields}] * 8
    assert refused[0] == {"outcome": "refused", "status": 429, "reason": "caller_rate_limit", "retry_after": 30}
    assert {event["error_code"] for event in inner[2:]} == {None}  # the status says it, as for the door's
    assert [(event["action"], event["target"]) for event in inner] == [("tools/call", "get_item")] * 10


def test_a_script_s_calls_are_spans_and_counts_of_the_exposition_they_reach(folder: Path) -> None:
    kept, metrics = Kept(), Metrics()
    install(Telemetry(tracing=Tracing(kept), metrics=metrics))
    try:
        with live_echo_gateway(_config("2/min"), folder) as base:
            _call(base, "front", "fan_out", {})
    finally:
        install(OFF)
    (request,) = [span for span in kept.spans if span.kind == SERVER]
    assert request.name == "tools/call fan_out"
    inner = [span for span in kept.spans if span.kind == INTERNAL]
    assert len(inner) == 10
    assert {span.parent_id for span in inner} == {request.span_id}  # inside the request that ran the script
    assert {span.trace_id for span in inner} == {request.trace_id}
    first = inner[0]
    assert first.name == "tools/call get_item"
    assert first.attributes["apimcp.exposition"] == "default/back"
    assert first.attributes["apimcp.via.tool"] == "fan_out"
    assert [span.attributes["apimcp.outcome"] for span in inner] == ["success"] * 2 + ["refused"] * 8
    backend = [span for span in kept.spans if span.kind == CLIENT]
    assert {span.parent_id for span in backend} == {span.span_id for span in inner[:2]}  # the two calls made
    counted = {
        sample.labels["outcome"]: sample.value
        for family in metrics.registry.collect()
        if family.name == "apimcp_script_calls"
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels["exposition"] == "default/back"
    }
    assert counted == {"success": 2.0, "refused": 8.0}


PEEK = """
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: front, version: "2.1"}
customTools:
  peek:
    description: reads one item of the back service
    input: {type: object}
    tools: [{tool: get_item, service: "back:2.1"}]
    script: |
      return rs.callTool("back:2.1", "get_item", {itemId: "1"});
"""


def test_a_script_cannot_call_into_an_exposition_that_checks_who_calls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts are written by whoever attaches artifacts to their service, and run for the script's caller (anyone,
    on an open exposition): a call into an exposition guarded by an API key (or OAuth) is refused, whoever the
    caller is, while the key's holders call it directly."""
    monkeypatch.setenv("APIMCP_TEST_BACK_KEY", "back-key-for-its-holders")
    (tmp_path / "peek.yaml").write_text(PEEK)
    config = f"""
services:
  front: {{openapi: {ECHO_SPEC}, name: front, backend: "{{backend}}", artifacts: [peek.yaml]}}
  back: {{openapi: {ECHO_SPEC}, name: back, backend: "{{backend}}"}}
expositions:
  front: {{services: [front]}}
  back: {{services: [back], auth: {{api_key: {{env: APIMCP_TEST_BACK_KEY}}}}}}
"""
    with live_echo_gateway(config, tmp_path) as base:
        peeked = _call(base, "front", "peek", {}).result
        with McpHttp(f"{base}/mcp/back") as mcp:
            direct = mcp.modern(
                "tools/call",
                {"name": "get_item", "arguments": {"itemId": "1"}},
                headers={"x-api-key": "back-key-for-its-holders"},
            )
    answer = peeked["structuredContent"]
    assert answer["ok"] is False, answer
    refusal = "back:2.1 checks who calls it (API key or OAuth): scripts of other expositions cannot call its tools"
    assert refusal in json.dumps(answer)
    assert direct.status == 200 and direct.result["isError"] is False
