"""Compiled services as JSON: what decodes is what was encoded, byte-stable, and bad input is refused clearly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import apimcp
from apimcp.catalog.codec import FORMAT, CodecError, decode_service, encode_service
from apimcp.catalog.model import (
    BodyBinding,
    DescriptionWarning,
    Operation,
    ParameterBinding,
    RestBinding,
    ServerTemplate,
    ServerVariable,
    Service,
    ToolHints,
)
from apimcp.importers.openapi import import_openapi
from tests.support.corpus import corpus_dir

ECHO_SPEC = Path(__file__).resolve().parents[1] / "gateway" / "echo_api.yaml"
DEMO_SPEC = Path(apimcp.__file__).resolve().parent / "demo_api" / "openapi.yaml"


def _corpus() -> list[Path]:
    base = corpus_dir()
    if base is None:
        return []
    return sorted(p for p in (base / "openapi").rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


def _round_trip(service: Service) -> Service:
    decoded = decode_service(encode_service(service))
    assert decoded == service
    return decoded


def _every_field() -> Service:
    """A service where no field holds its default, so a field the codec drops or mangles shows."""
    servers = (ServerTemplate("https://{region}.example.com/{base}", {"region": ServerVariable("eu", ("eu", "us")),
                                                                      "base": ServerVariable("v2")}),)  # fmt: skip
    upload = Operation(
        tool_name="upload_photo",
        input_schema={"type": "object", "properties": {"photo": {"type": "string"}}, "required": ["photo"]},
        output_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        title="Upload a photo",
        description="Stores **one** photo.",
        hints=ToolHints(read_only=False, destructive=True, idempotent=None, open_world=False),
        operation_id="uploadPhoto",
        tags=("photos", "media"),
        deprecated=True,
        binding=RestBinding(
            method="POST",
            path="/albums/{album}/photos",
            parameters=(
                ParameterBinding("album", "album", "path", "label", True),
                ParameterBinding("filter_", "filter", "query", "deepObject", True, allow_reserved=True),
                ParameterBinding("meta", "X-Meta", "header", "simple", False, content_type="application/json"),
            ),
            body=BodyBinding(
                media_type="multipart/form-data",
                kind="multipart",
                argument=None,
                fields=("photo", "caption"),
                extra_fields=True,
                binary_fields=frozenset({"photo", "thumbnail"}),
                field_media_types={"photo": "image/png"},
                required=True,
            ),
            accept=("application/json", "text/plain"),
            servers=(ServerTemplate("https://uploads.example.com"),),
        ),
    )
    ping = Operation(tool_name="ping", input_schema={"type": "object"}, binding=RestBinding("GET", "/ping"))
    return Service(
        name="Photos",
        version="3.1.4",
        operations=(upload, ping),
        description="Albums and photos.",
        servers=servers,
        source="https://example.com/photos.yaml",
        warnings=(
            DescriptionWarning("/paths/~1albums/post/parameters/0/schema/pattern", "dropped", "POST /albums"),
            DescriptionWarning("/", "more were left out"),
        ),
    )


def test_every_field_survives() -> None:
    service = _every_field()
    decoded = _round_trip(service)
    body = decoded.operations[0].binding.body
    assert body is not None
    # Equality alone would accept a set for a frozenset and cannot see a list turned into a tuple twice.
    assert isinstance(body.binary_fields, frozenset)
    assert body.binary_fields == {"photo", "thumbnail"}
    assert decoded.operations[0].binding.parameters[2].content_type == "application/json"
    assert decoded.operations[0].hints == ToolHints(False, True, None, False)
    assert decoded.servers[0].resolve() == "https://eu.example.com/v2"
    assert decoded.servers[0].variables["region"].enum == ("eu", "us")
    assert decoded.operations[1].binding.body is None
    assert decoded.operations[1].output_schema is None
    assert [str(w) for w in decoded.warnings] == [
        "POST /albums: /paths/~1albums/post/parameters/0/schema/pattern: dropped",
        "/: more were left out",
    ]


@pytest.mark.parametrize("path", [ECHO_SPEC, DEMO_SPEC], ids=["echo", "demo"])
def test_shipped_descriptions_round_trip(path: Path) -> None:
    service = import_openapi(str(path))
    assert len(service.operations) > 5
    _round_trip(service)


@pytest.mark.parametrize(
    "path", _corpus() or [None], ids=lambda p: f"{p.parent.name}/{p.name}" if p else "missing"
)  # fmt: skip
def test_corpus_round_trips(path: Path | None) -> None:
    if path is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    _round_trip(import_openapi(str(path)))


def test_a_parsed_encoding_decodes_too() -> None:
    """A store may hand back the encoding as JSON it already parsed."""
    service = import_openapi(str(ECHO_SPEC))
    assert decode_service(orjson.loads(encode_service(service))) == service


def test_encoding_is_deterministic() -> None:
    service = import_openapi(str(DEMO_SPEC))
    first = encode_service(service)
    assert encode_service(import_openapi(str(DEMO_SPEC))) == first  # a fresh import encodes to the same bytes
    assert encode_service(decode_service(first)) == first
    assert orjson.loads(first)["format"] == FORMAT


def test_decoding_shares_equal_definitions() -> None:
    """Tool schemas referring to one component hold one copy of its definition after decoding."""
    decoded = decode_service(encode_service(import_openapi(str(DEMO_SPEC))))
    schemas = [op.input_schema for op in decoded.operations]
    schemas += [op.output_schema for op in decoded.operations if op.output_schema is not None]
    tags = [schema["$defs"]["Tag"] for schema in schemas if "Tag" in schema.get("$defs", {})]
    assert len(tags) >= 4  # in input and output schemas of several operations
    assert all(definition is tags[0] for definition in tags)
    assert len({id(schema) for schema in schemas}) == len(schemas)  # the schemas themselves stay apart


def _valid() -> dict[str, Any]:
    encoded: dict[str, Any] = orjson.loads(encode_service(import_openapi(str(ECHO_SPEC))))
    return encoded


def _without(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


def _first_operation(**changes: Any) -> dict[str, Any]:
    valid = _valid()
    return {**valid, "operations": [{**valid["operations"][0], **changes}]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not json", "a compiled service is not valid JSON"),
        (b"", "a compiled service is not valid JSON"),
        (b"[1, 2]", "a compiled service must be a JSON object, not list"),
        (orjson.dumps({**_valid(), "format": 2}), "a compiled service must have format 1, not 2"),
        (orjson.dumps({**_valid(), "format": "1"}), "a compiled service must have format 1, not '1'"),
        (orjson.dumps({**_valid(), "format": True}), "a compiled service must have format 1, not True"),
        (orjson.dumps(_without(_valid(), "format")), "a compiled service must have format 1, not None"),
        (_without(_valid(), "name"), "a compiled service is malformed: 'name' is missing"),
        ({**_valid(), "operations": 5}, "a compiled service is malformed: 'int' object is not iterable"),
        ({**_valid(), "servers": [{"url": "x", "variables": []}]}, "a compiled service is malformed"),
        (_first_operation(rest=None), "a compiled service is malformed"),
        (_first_operation(hints=[True]), "a compiled service is malformed: not enough values to unpack"),
        ({**_valid(), "operations": [_without(_valid()["operations"][0], "tool")]},
         "a compiled service is malformed: 'tool' is missing"),
    ],
    ids=["garbage", "empty", "array", "format-2", "format-string", "format-true", "no-format", "no-name",
         "operations-int", "variables-list", "rest-null", "hints-short", "no-tool"],
)  # fmt: skip
def test_bad_input_is_refused_clearly(data: bytes | dict[str, Any], message: str) -> None:
    with pytest.raises(CodecError) as caught:
        decode_service(data)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ValueError)
