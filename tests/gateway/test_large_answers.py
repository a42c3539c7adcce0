"""A large backend answer is read and checked in a shaping process, never parsed on the event loop, and gives
the client exactly what parsing it on the loop gave (issue 21)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from apimcp.backends.base import UnparsedJson
from apimcp.backends.graphql import graphql_answer
from apimcp.backends.rest import close_session, json_answer, new_session
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.large_answers import large_answer_result
from apimcp.gateway.plan import plan_gateway
from apimcp.gateway.results import tool_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import RawJson, dialects
from apimcp.protocol.versions import ALL_REVISIONS
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES, ShapingLimits
from apimcp.shaping.pool import Done, Job, ShapingPool, ShapingUnavailable
from tests.shaping.recording import Recording
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app
from tests.support.mcp_http import MODERN, SESSION_VERSIONS, McpHttp

ROWS = [{"id": n, "name": f"widget {n} é", "price": n / 4, "tags": ["a", "b"]} for n in range(8000)]
SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}},
    "required": ["items"],
}
ANSWERS: dict[str, bytes] = {
    "compact": orjson.dumps({"items": ROWS}),
    "spaced": orjson.dumps({"items": ROWS}).replace(b'":', b'": '),
    "pretty": orjson.dumps({"items": ROWS}, option=orjson.OPT_INDENT_2),
    "array": orjson.dumps(ROWS),
    "wrong": orjson.dumps({"items": [{**row, "id": str(row["id"])} for row in ROWS]}),
    "invalid": orjson.dumps({"items": ROWS})[:-1],
}
assert all(len(answer) >= DEFAULT_LARGE_FROM_BYTES for answer in ANSWERS.values())
TOO_DEEP = b'{"deep": ' + b"[" * 300 + b"1" + b"]" * 300 + b"}"
SMALL = {
    "deep": TOO_DEEP,
    "deep-pretty": TOO_DEEP + b"\n",
    "infinite": b'{"items": [1e400]}',
    "cut": b'{"items": [',
    "deeper": b'{"items": ' + b"[" * 1100 + b"]" * 1100 + b"}",
}
"""Small answers orjson reads (1,024 levels) but cannot write (254): the compact one is written only with the
response, the other is made compact when it arrives."""

SPEC = f"""
openapi: 3.0.3
info: {{title: Answers, version: "1"}}
paths:
  /checked/{{kind}}:
    get:
      operationId: getChecked
      parameters: [{{name: kind, in: path, required: true, schema: {{type: string}}}}]
      responses:
        "200":
          description: checked against its schema
          content: {{application/json: {{schema: {orjson.dumps(SCHEMA).decode()}}}}}
  /plain/{{kind}}:
    get:
      operationId: getPlain
      parameters: [{{name: kind, in: path, required: true, schema: {{type: string}}}}]
      responses:
        "200": {{description: anything, content: {{application/json: {{}}}}}}
"""


def answers_app() -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        return web.Response(body=ANSWERS.get(kind) or SMALL[kind], content_type="application/json")

    app = web.Application()
    app.router.add_get("/{check}/{kind}", answer)
    return app


@pytest.fixture(scope="module")
def backend() -> Iterator[str]:
    with live_aiohttp(answers_app) as base:
        yield base


def gateway(backend: str, tmp: Path, large_from_bytes: int) -> Any:
    spec = tmp / f"answers-{large_from_bytes}.yaml"
    spec.write_text(SPEC)
    config = f"services:\n  answers: {{openapi: {spec}, backend: '{backend}', max_response_bytes: 4194304}}\n"

    @asynccontextmanager
    async def make() -> AsyncIterator[GatewayApp]:
        session = new_session()
        try:
            plan = plan_gateway(parse_config(config, "gateway.yaml", tmp))
            app = build_gateway(plan, session, shaping_limits=ShapingLimits(large_from_bytes=large_from_bytes))
            yield app
            await app.runtime.close()
        finally:
            await close_session(session)

    return live_app(make)


def calls(mcp: McpHttp, version: str) -> list[str]:
    """The raw JSON-RPC response of every tool and answer, in `version`."""
    session = mcp.initialize(version) if version != MODERN else None
    texts = []
    for tool in ("get_checked", "get_plain"):
        for kind in ANSWERS:
            params = {"name": tool, "arguments": {"kind": kind}}
            reply = mcp.modern("tools/call", params) if session is None else session.request("tools/call", params)
            assert reply.status == 200 and reply.content_type.startswith("application/json")
            texts.append(reply.text)
    return texts


def test_a_large_answer_reaches_the_client_byte_for_byte_as_when_it_was_parsed_on_the_loop(
    backend: str, tmp_path: Path
) -> None:
    # the same answers through a gateway that parses everything on its loop (as before) and one that does not
    with gateway(backend, tmp_path, 1 << 40) as parsing, gateway(backend, tmp_path, DEFAULT_LARGE_FROM_BYTES) as base:
        for version in (*SESSION_VERSIONS, MODERN):
            with McpHttp(f"{parsing}/mcp/answers") as before, McpHttp(f"{base}/mcp/answers") as now:
                expected, got = calls(before, version), calls(now, version)
                for index, (was, now_text) in enumerate(zip(expected, got, strict=True)):
                    assert now_text == was, f"{version}: call {index} differs"
        wrong = orjson.loads(got[len(ANSWERS) - 2])["result"]  # get_checked of the answer its schema refuses
        assert wrong["isError"] is True
        assert wrong["content"][0]["text"].startswith("The backend answered, but not as its API description says")


def test_a_small_answer_too_deep_to_pass_on_is_a_tool_error_saying_so(backend: str, tmp_path: Path) -> None:
    with gateway(backend, tmp_path, DEFAULT_LARGE_FROM_BYTES) as base, McpHttp(f"{base}/mcp/answers") as mcp:
        for kind, said in (
            ("deep", "The tool's result cannot be sent: it is nested more than 254 levels deep."),
            ("deep-pretty", "The backend's JSON answer cannot be passed on: it is nested more than 254 levels deep."),
        ):
            reply = mcp.modern("tools/call", {"name": "get_plain", "arguments": {"kind": kind}})
            assert reply.status == 200 and reply.result["isError"] is True
            assert [block["text"] for block in reply.result["content"]] == [said]


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_json_that_cannot_be_read_is_passed_on_as_text_and_a_schema_s_error_says_why(
    backend: str, tmp_path: Path, large: bool
) -> None:
    with (
        gateway(backend, tmp_path, 8 if large else DEFAULT_LARGE_FROM_BYTES) as base,
        McpHttp(f"{base}/mcp/answers") as mcp,
    ):
        for kind, why in (
            ("infinite", "it holds a number beyond the range of a double"),  # valid JSON, but not as doubles
            ("cut", "it is not valid JSON"),
            ("deeper", "it is nested more than 1,024 levels deep"),
        ):
            plain = mcp.modern("tools/call", {"name": "get_plain", "arguments": {"kind": kind}}).result
            assert plain["content"] == [{"type": "text", "text": SMALL[kind].decode()}] and not plain.get("isError")
            checked = mcp.modern("tools/call", {"name": "get_checked", "arguments": {"kind": kind}}).result
            assert checked["isError"] is True
            assert checked["content"][0]["text"] == (
                f"The call succeeded (HTTP 200), but the backend answered with application/json content that cannot be"
                f" read ({why}), not the JSON object its API description promises for this tool (its output schema)."
            )


def test_a_large_backend_answer_is_never_parsed_in_the_gateway_process(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = orjson.loads
    parsed: list[tuple[str, int]] = []

    def spying(data: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():  # not this test's client: the gateway's loop
            parsed.append((threading.current_thread().name, len(data)))
        return loads(data)

    monkeypatch.setattr(orjson, "loads", spying)
    with gateway(backend, tmp_path, DEFAULT_LARGE_FROM_BYTES) as base, McpHttp(f"{base}/mcp/answers") as mcp:
        for tool in ("get_checked", "get_plain"):
            for kind in ("compact", "pretty", "wrong"):
                assert mcp.modern("tools/call", {"name": tool, "arguments": {"kind": kind}}).status == 200
    assert parsed and all(size < 64 * 1024 for _, size in parsed), parsed  # requests and replies' headers only


@pytest.fixture(scope="module")
def pool() -> Iterator[ShapingPool]:
    shaping = ShapingPool(ShapingLimits(workers=1))
    yield shaping
    shaping.close()


def test_a_large_answer_is_validated_in_a_shaping_process_never_parsed_on_the_event_loop(
    pool: ShapingPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = orjson.loads
    parsed_here: list[int] = []

    def spying(data: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            parsed_here.append(len(data))
        return loads(data)

    monkeypatch.setattr(orjson, "loads", spying)
    shaper = Recording(pool)
    validator = ArgumentValidator(SCHEMA)
    for kind in ("compact", "pretty", "wrong"):
        answer = UnparsedJson(ANSWERS[kind], json_answer)
        result = asyncio.run(large_answer_result(answer, validator, shaper))
        assert result.is_error is (kind == "wrong")
        if kind != "wrong":
            assert isinstance(result.structured_content, RawJson)
    assert all(size < 1024 for size in parsed_here), parsed_here  # the replies' small headers only
    assert len(shaper.pids) == 3 and os.getpid() not in shaper.pids


@pytest.mark.parametrize(
    "answer",
    [
        {"data": {"books": ROWS}},
        {"data": {"books": ROWS}, "errors": [{"message": "partly", "path": ["books", 3]}]},
        {"errors": [{"message": "no books today " * 20000}]},
        {"neither": ROWS},
    ],
    ids=["data", "data and errors", "errors only", "not graphql"],
)
def test_a_large_graphql_answer_gives_the_result_its_parse_on_the_loop_gave(pool: ShapingPool, answer: Any) -> None:
    body = orjson.dumps(answer)
    expected = tool_result(graphql_answer(body, 200, "application/json"))
    got = asyncio.run(large_answer_result(UnparsedJson(body, graphql_answer), None, pool))
    for rev in ALL_REVISIONS:
        assert orjson.dumps(dialects.call_tool_result(got, rev)) == orjson.dumps(
            dialects.call_tool_result(expected, rev)
        )


def test_a_large_answer_the_shaping_processes_cannot_take_is_an_error_result() -> None:
    class Busy:
        async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
            raise ShapingUnavailable("The gateway is shaping as many large results as it can")

    result = asyncio.run(large_answer_result(UnparsedJson(ANSWERS["compact"], json_answer), None, Busy()))
    assert result.is_error and result.structured_content is not None
    assert result.content[0].text == "The gateway is shaping as many large results as it can"  # type: ignore[union-attr]


@pytest.mark.parametrize("read", [json_answer, graphql_answer], ids=["rest", "graphql"])
def test_a_large_answer_too_deep_to_pass_on_is_an_error_result_saying_so(pool: ShapingPool, read: Any) -> None:
    deep: Any = 1
    for _ in range(300):  # orjson reads 1,024 levels but writes 254
        deep = [deep]
    body = orjson.dumps({"data": {"pad": "x" * DEFAULT_LARGE_FROM_BYTES}}) + b"\n"
    body = body.replace(b'"pad"', b'"deep":' + b"[" * 300 + b"1" + b"]" * 300 + b',"pad"')
    result = asyncio.run(large_answer_result(UnparsedJson(body, read), None, pool))
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "The backend's JSON answer cannot be passed on: it is nested more than 254 levels deep."
    )
