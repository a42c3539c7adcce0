"""Real descriptions called rightly: each finding of issue 9 (a)-(f), reproduced by a minimal description,
imported, called, and judged by Prism the way tests/gateway/test_prism.py judges the corpus.

One Prism process serves every OpenAPI 3.1 case; Swagger 2.0's tuple items (f) need a second one. The
output-schema finding (d) is also called through a gateway with the official MCP client, which refuses
a success without structured content from a tool that declares an output schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema_rs
import mcp_types as types
import pytest
from aiohttp import web
from mcp import Client

from apimcp.backends.base import BackendResult, BinaryBody, EmptyBody, TextBody
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.catalog.model import Operation, RestBinding, Service
from apimcp.gateway.results import tool_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.importers.openapi import import_openapi
from apimcp.protocol import dialects
from apimcp.protocol.versions import V2025_11_25
from tests.gateway.conftest import gateway_of
from tests.gateway.test_prism import (
    BASE64_SAMPLE,
    MAX_OPTIONAL_DEPTH,
    ArgumentGenerator,
    Exchange,
    Prism,
    Recorder,
    Verdict,
    judge,
    serving,
)
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]

OBJECT_ANSWER = {
    "description": "done",
    "content": {"application/json": {"schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}},
}


def _multipart(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"required": True, "content": {"multipart/form-data": {"schema": schema}}}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


FINDINGS: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Findings", "version": "1"},
    "servers": [{"url": "http://127.0.0.1"}],
    "paths": {
        # (a) multipart bodies whose parts are not files; a file part marked only by contentEncoding
        "/a/forms": {
            "post": {
                "operationId": "a_multipart_without_files",
                "requestBody": _multipart({"name": {"type": "string"}, "note": {"type": "string"}}, ["name"]),
                "responses": {"200": OBJECT_ANSWER},
            }
        },
        "/a/uploads": {
            "post": {
                "operationId": "a_file_marked_by_content_encoding",
                "requestBody": _multipart(
                    {"name": {"type": "string"}, "file": {"type": "string", "contentEncoding": "binary"}},
                    ["name", "file"],
                ),
                "responses": {"200": OBJECT_ANSWER},
            }
        },
        # (b) a required body property that `properties` does not describe
        "/b/items": {
            "post": {
                "operationId": "b_required_but_undescribed",
                "requestBody": _json_body(
                    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name", "code"]}
                ),
                "responses": {"200": OBJECT_ANSWER},
            }
        },
        # (c) an object-level keyword of a body that flattening would lose
        "/c/filters": {
            "post": {
                "operationId": "c_min_properties",
                "parameters": [{"name": "dry", "in": "query", "schema": {"type": "boolean"}}],
                "requestBody": _json_body(
                    {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "minProperties": 1,
                        "additionalProperties": False,
                    }
                ),
                "responses": {"200": OBJECT_ANSWER},
            }
        },
        "/c/uploads": {
            "post": {
                "operationId": "c_multipart_with_max_properties",
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "title": {"type": "string"},
                                    "file": {"type": "string", "format": "binary"},
                                },
                                "required": ["title"],
                                "maxProperties": 2,
                            }
                        }
                    },
                },
                "responses": {"200": OBJECT_ANSWER},
            }
        },
        # (d) a 204 declared with JSON content; JSON or nothing
        "/d/status": {
            "get": {
                "operationId": "d_no_content_declared_as_json",
                "responses": {"204": {**OBJECT_ANSWER, "description": "nothing, although it says JSON"}},
            }
        },
        "/d/either": {
            "get": {
                "operationId": "d_json_or_nothing",
                "responses": {"200": OBJECT_ANSWER, "204": {"description": "nothing"}},
            }
        },
        # (e) an invalid keyword value
        "/e/pets": {
            "get": {
                "operationId": "e_invalid_pattern",
                "parameters": [
                    {"name": "limit", "in": "query", "required": True, "schema": {"type": "string", "pattern": 0}}
                ],
                "responses": {"200": OBJECT_ANSWER},
            }
        },
    },
}

PET = {"$ref": "#/definitions/Pet"}
TUPLES: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Tuples", "version": "1"},
    "host": "127.0.0.1",
    "basePath": "/",
    "schemes": ["http"],
    "consumes": ["application/json"],
    "produces": ["application/json"],
    "paths": {
        "/f/pets": {
            "post": {
                "operationId": "f_tuple_items",
                "parameters": [
                    {"in": "body", "name": "body", "required": True, "schema": {"type": "array", "items": [PET]}}
                ],
                "responses": {
                    "200": {
                        "description": "stored",
                        "schema": {"type": "object", "properties": {"pets": {"type": "array", "items": [PET]}}},
                    }
                },
            }
        }
    },
    "definitions": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
}


@dataclass
class Served:
    prism: Prism
    service: Service

    def operation(self, tool: str) -> Operation:
        found = self.service.operation(tool)
        assert found is not None, f"no tool {tool} in {[op.tool_name for op in self.service.operations]}"
        return found

    def warnings(self) -> list[str]:
        return [str(warning) for warning in self.service.warnings]


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("findings")
    spec = folder / "findings.json"
    spec.write_text(json.dumps(FINDINGS))
    with serving(spec, "findings", folder) as prism:
        yield Served(prism, import_openapi(str(spec)))


@pytest.fixture(scope="module")
def tuples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("tuples")
    spec = folder / "tuples.json"
    spec.write_text(json.dumps(TUPLES))
    with serving(spec, "tuples", folder) as prism:
        yield Served(prism, import_openapi(str(spec)))


@dataclass
class Call:
    arguments: dict[str, Any]
    result: BackendResult
    sent: Exchange
    verdict: Verdict


def smallest_arguments(operation: Operation) -> dict[str, Any]:
    """The fewest arguments the tool's input schema accepts (required ones only), else generated ones with
    optional properties: the call a client is allowed to make with the least."""
    schema = operation.input_schema
    least = ArgumentGenerator(schema).value(schema, MAX_OPTIONAL_DEPTH, None)
    if not ArgumentValidator(schema).problems(least):
        return dict(least)
    return ArgumentGenerator(schema).arguments()


async def call(served: Served, tool: str, arguments: dict[str, Any] | None = None) -> Call:
    """Call a tool through RestBackend against Prism; Prism's verdict on the request as sent."""
    operation = served.operation(tool)
    given = smallest_arguments(operation) if arguments is None else arguments
    assert not ArgumentValidator(operation.input_schema).problems(given), f"{tool}: {given} does not fit its schema"
    recorder = Recorder()
    session = new_session()
    session.trace_configs.append(recorder.config)
    try:
        result = await RestBackend(served.service, session, base_url=served.prism.url).call(operation, given)
    finally:
        await close_session(session)
    assert isinstance(operation.binding, RestBinding)
    verdict = judge(result, recorder.last, {"200": {}, "204": {}})
    return Call(given, result, recorder.last, verdict)


def assert_accepted(done: Call) -> None:
    assert not done.verdict.violations, (
        f"Prism rejected {done.arguments}: {done.verdict.violations}\n{done.sent.describe()}"
    )
    assert done.verdict.other is None, done.verdict.other
    assert done.sent.status is not None and done.sent.status < 300, done.sent.describe()


def assert_valid_tool_schemas(service: Service) -> None:
    """Every schema a tools/list would carry is valid 2020-12 and compiles in the gateway's validator."""
    for operation in service.operations:
        for schema in (operation.input_schema, operation.output_schema):
            if schema is not None:
                jsonschema.Draft202012Validator.check_schema(schema)
                jsonschema_rs.Draft202012Validator(dict(schema))


# --- (a) ----------------------------------------------------------------------------------------


async def test_a_multipart_body_whose_parts_are_not_files_is_sent_as_multipart(findings: Served) -> None:
    done = await call(findings, "a_multipart_without_files")
    assert done.sent.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert_accepted(done)


async def test_a_file_part_marked_only_by_content_encoding_binary_is_sent_as_a_file(findings: Served) -> None:
    operation = findings.operation("a_file_marked_by_content_encoding")
    assert isinstance(operation.binding, RestBinding) and operation.binding.body is not None
    assert operation.binding.body.binary_fields == {"file"}
    assert operation.input_schema["properties"]["file"]["contentEncoding"] == "base64"
    done = await call(findings, "a_file_marked_by_content_encoding")
    assert done.sent.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert b'name="file"; filename="file"' in done.sent.body
    assert b"apimcp\x00\x01\x02" in done.sent.body  # the base64 argument, decoded
    assert_accepted(done)


# --- (b) ----------------------------------------------------------------------------------------


async def test_b_a_body_property_required_but_not_in_properties_can_be_sent(findings: Served) -> None:
    schema = findings.operation("b_required_but_undescribed").input_schema
    assert schema["properties"]["code"] == {}
    assert schema["required"] == ["name", "code"]
    assert schema["additionalProperties"] is False
    assert (
        "POST /b/items: /paths/~1b~1items/post/requestBody/content/application~1json/schema/required: body "
        "property 'code' is required but not described in `properties`; it is offered as an argument taking "
        "any value"
    ) in findings.warnings()
    done = await call(findings, "b_required_but_undescribed")
    assert json.loads(done.sent.body) == {"name": "sample", "code": "sample"}
    assert_accepted(done)


# --- (c) ----------------------------------------------------------------------------------------


async def test_c_a_body_min_properties_is_kept_by_not_flattening_the_body(findings: Served) -> None:
    operation = findings.operation("c_min_properties")
    schema = operation.input_schema
    assert set(schema["properties"]) == {"body", "dry"}
    assert schema["properties"]["body"]["minProperties"] == 1
    assert schema["required"] == ["body"]
    validator = ArgumentValidator(schema)
    assert validator.problems({}) and validator.problems({"body": {}})  # nothing lets `{}` be sent any more
    done = await call(findings, "c_min_properties")
    assert json.loads(done.sent.body) == done.arguments["body"] != {}
    assert_accepted(done)


async def test_c_a_multipart_body_kept_whole_is_still_sent_as_its_parts(findings: Served) -> None:
    operation = findings.operation("c_multipart_with_max_properties")
    body = operation.input_schema["properties"]["body"]
    assert body["maxProperties"] == 2
    assert body["properties"]["file"]["contentEncoding"] == "base64"
    done = await call(findings, "c_multipart_with_max_properties", {"body": {"title": "t", "file": BASE64_SAMPLE}})
    assert done.sent.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert b'name="title"' in done.sent.body and b'name="file"; filename="file"' in done.sent.body
    assert b"apimcp\x00\x01\x02" in done.sent.body
    assert_accepted(done)


# --- (d) ----------------------------------------------------------------------------------------


async def test_d_an_output_schema_is_promised_only_when_every_success_is_a_json_object(findings: Served) -> None:
    assert findings.operation("d_no_content_declared_as_json").output_schema is None  # 204 never has a body
    assert findings.operation("d_json_or_nothing").output_schema is None  # it may answer 204
    assert findings.operation("b_required_but_undescribed").output_schema is not None
    assert (
        "GET /d/status: /paths/~1d~1status/get/responses/204/content: a 204 response has no body; the content "
        "it declares is ignored"
    ) in findings.warnings()
    for tool in ("d_no_content_declared_as_json", "d_json_or_nothing"):
        assert_accepted(await call(findings, tool))


@pytest.fixture(scope="module")
def no_content_backend() -> Iterator[str]:
    """A backend that answers 204 to everything, whatever its description promises."""

    async def nothing(_: web.Request) -> web.Response:
        return web.Response(status=204)

    def make() -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", nothing)
        return app

    with live_aiohttp(make) as url:
        yield url


@pytest.fixture(scope="module")
def gateway(findings: Served, no_content_backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway serving the findings twice: in front of Prism, and in front of a backend that always
    answers 204 (so that a tool with an output schema gets a success without JSON)."""
    config = f"""
services:
  findings:
    openapi: {findings.prism.spec}
    backend: {findings.prism.url}
  silent:
    openapi: {findings.prism.spec}
    backend: {no_content_backend}
"""
    with live_app(lambda: gateway_of(config, tmp_path_factory.mktemp("gateway"))) as base:
        yield base


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _tools(client: Client) -> dict[str, types.Tool]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_d_the_official_client_accepts_every_answer_of_a_204_operation(gateway: str, mode: str) -> None:
    async with Client(f"{gateway}/mcp/findings", mode=mode) as client:
        tools = await _tools(client)
        assert tools["d_no_content_declared_as_json"].output_schema is None
        assert tools["d_json_or_nothing"].output_schema is None
        status = await client.call_tool("d_no_content_declared_as_json", {})  # the client checks the result
        either = await client.call_tool("d_json_or_nothing", {})
    assert not status.is_error and not either.is_error


async def test_d_a_success_without_json_from_a_tool_with_an_output_schema_is_an_error_clients_accept(
    gateway: str, mode: str
) -> None:
    async with Client(f"{gateway}/mcp/silent", mode=mode) as client:
        tools = await _tools(client)
        assert tools["b_required_but_undescribed"].output_schema is not None
        result = await client.call_tool("b_required_but_undescribed", {"name": "n", "code": "c"})
    assert result.is_error
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    assert first.text.startswith("The call succeeded (HTTP 204), but the backend answered with no content")


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        (TextBody("plain words", "text/plain", 201), types.TextContent),
        (BinaryBody(b"\x89PNG", "image/png", "http://backend/x", 200), types.ImageContent),
        (EmptyBody(205), types.TextContent),
    ],
)
def test_d_any_other_success_of_a_tool_with_an_output_schema_is_an_error_that_keeps_it(
    answer: TextBody | BinaryBody | EmptyBody, kept: type[Any]
) -> None:
    output = ArgumentValidator({"type": "object"})
    result = dialects.call_tool_result(tool_result(answer, output), V2025_11_25)
    assert result["isError"] is True and "structuredContent" not in result
    assert result["content"][0]["text"].startswith(f"The call succeeded (HTTP {answer.status}), but the backend")
    assert types.CallToolResult.model_validate(result).content[1].__class__ is kept
    plain = dialects.call_tool_result(tool_result(answer), V2025_11_25)  # no output schema: as before
    assert "isError" not in plain or plain["isError"] is False


# --- (e) ----------------------------------------------------------------------------------------


async def test_e_an_invalid_keyword_is_dropped_at_import_and_reported(findings: Served) -> None:
    schema = findings.operation("e_invalid_pattern").input_schema
    assert schema["properties"]["limit"] == {"type": "string"}
    assert (
        "GET /e/pets: /paths/~1e~1pets/get/parameters/0/schema/pattern: `pattern: 0` is not valid JSON Schema (0 is "
        'not of type "string"); dropped'
    ) in findings.warnings()
    assert_valid_tool_schemas(findings.service)
    assert_accepted(await call(findings, "e_invalid_pattern"))


async def test_e_tools_list_is_valid_and_the_call_answers(gateway: str, mode: str) -> None:
    async with Client(f"{gateway}/mcp/findings", mode=mode) as client:
        tools = await _tools(client)
        result = await client.call_tool("e_invalid_pattern", {"limit": "10"})  # was -32603: no validator compiled
    for tool in tools.values():
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert not result.is_error


# --- (f) ----------------------------------------------------------------------------------------


async def test_f_swagger_tuple_items_import_and_are_called_rightly(tuples: Served) -> None:
    operation = tuples.operation("f_tuple_items")
    body = operation.input_schema["properties"]["body"]
    assert body == {"type": "array", "items": {"$ref": "#/$defs/Pet"}}
    assert operation.output_schema is not None
    assert operation.output_schema["properties"]["pets"]["items"] == {"$ref": "#/$defs/Pet"}
    assert (
        "POST /f/pets: /paths/~1f~1pets/post/parameters/0/schema/items: `items` is a list (the tuple form of older "
        "JSON Schema drafts); its one schema is read as the schema of every item"
    ) in tuples.warnings()
    assert_valid_tool_schemas(tuples.service)
    done = await call(tuples, "f_tuple_items", {"body": [{"name": "Rex"}, {"name": "Tom"}]})
    assert json.loads(done.sent.body) == [{"name": "Rex"}, {"name": "Tom"}]
    assert_accepted(done)
