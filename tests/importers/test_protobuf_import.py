"""Importing gRPC services: .proto files, descriptor sets, uploads and server reflection, compiled in-process."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from apimcp.catalog.model import GrpcBinding, ServerTemplate, Service
from apimcp.importers.errors import SpecError
from apimcp.importers.protobuf import (
    compile_protos,
    import_protobuf,
    looks_like_descriptor_set,
    looks_like_protobuf,
)
from tests.support.corpus import corpus_path
from tests.support.fetching import loopback_fetcher
from tests.support.grpc_server import PROTOS, SHOP_PROTO, RunningServer, running_server

SHOP = str(PROTOS / SHOP_PROTO)
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@pytest.fixture(scope="module")
def shop() -> Service:
    return import_protobuf(SHOP, include_paths=[str(PROTOS)])


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running_server() as running:
        yield running


def _tools(service: Service) -> dict[str, tuple[Any, Any]]:
    return {op.tool_name: (op.input_schema, op.output_schema) for op in service.operations}


def _without_descriptions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list | tuple):
        return [_without_descriptions(v) for v in value]
    return value


def _validator(schema: Any) -> Draft202012Validator:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


# --- the service and its tools -------------------------------------------------------------------------------------


def test_a_proto_file_becomes_a_service_with_one_tool_per_method(shop: Service) -> None:
    assert (shop.name, shop.version, shop.kind) == ("shop.v1.ShopService", "v1", "grpc")
    assert shop.description == "Sells things, one item at a time."
    assert shop.servers == ()
    assert [op.tool_name for op in shop.operations] == [
        "GetItem", "PutItem", "ListItems", "AddLines", "SumLines", "Chat", "Fail", "Sleep", "WhoAmI", "OldPing"
    ]  # fmt: skip
    get = shop.operation("GetItem")
    assert get is not None
    assert get.binding == GrpcBinding("shop.v1.ShopService", "GetItem", "shop.v1.GetItemRequest", "shop.v1.Item")
    assert get.binding.path == "/shop.v1.ShopService/GetItem"
    assert get.operation_id == "shop.v1.ShopService/GetItem"
    assert get.tags == ("shop.v1.ShopService",)
    assert get.description == "Gets one item by its id."
    assert get.hints.read_only is True
    put = shop.operation("PutItem")
    assert put is not None and put.hints.idempotent is True and put.hints.read_only is None
    old = shop.operation("OldPing")
    assert old is not None and old.deprecated and old.description is None
    assert shop.operation("AddLines") is not None and not shop.operation("AddLines").deprecated  # type: ignore[union-attr]


def test_streaming_methods_say_how_their_messages_travel(shop: Service) -> None:
    listing, summing, chat = (shop.operation(n) for n in ("ListItems", "SumLines", "Chat"))
    assert listing is not None and summing is not None and chat is not None
    assert isinstance(listing.binding, GrpcBinding) and listing.binding.server_streaming
    assert "collected, in order, in `messages`" in (listing.description or "")
    assert listing.output_schema is not None
    assert listing.output_schema["properties"]["messages"]["items"] == {"$ref": "#/$defs/shop.v1.Item"}
    assert listing.input_schema["properties"].keys() == {"count", "delayMs"}

    assert isinstance(summing.binding, GrpcBinding) and summing.binding.client_streaming
    assert "list in `messages`" in (summing.description or "")
    assert summing.input_schema["required"] == ["messages"]
    assert summing.input_schema["properties"]["messages"]["type"] == "array"
    assert summing.output_schema is not None and summing.output_schema["properties"].keys() == {"quantity", "lines"}
    check = _validator(summing.input_schema)
    check.validate({"messages": [{"sku": "a", "quantity": "2"}, {"quantity": 3}]})
    with pytest.raises(ValidationError):
        check.validate({"sku": "a"})

    assert "Bidirectional streaming" in (chat.description or "")
    assert chat.input_schema["required"] == ["messages"]
    assert chat.output_schema is not None and chat.output_schema["required"] == ["messages"]


def test_tool_names_take_the_prefix_and_names_and_versions_can_be_given() -> None:
    service = import_protobuf(SHOP, include_paths=[str(PROTOS)], tool_prefix="shop_", name="Shop", version="2024")
    assert (service.name, service.version) == ("Shop", "2024")
    assert service.operation("shop_GetItem") is not None


# --- schemas follow the proto3 JSON mapping ------------------------------------------------------------------------


def test_every_schema_is_valid_draft_2020_12(shop: Service) -> None:
    for op in shop.operations:
        _validator(op.input_schema)
        assert op.input_schema["type"] == "object"
        assert op.output_schema is not None
        _validator(op.output_schema)


def test_item_schema_follows_the_json_mapping(shop: Service) -> None:
    put = shop.operation("PutItem")
    assert put is not None
    schema = put.input_schema
    properties = schema["properties"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["id"]  # (google.api.field_behavior) = REQUIRED
    assert schema["description"] == "Something for sale."
    assert "percentOff" in properties and "createdAt" in properties and "priceByDay" in properties  # json names
    assert properties["title"]["description"] == "Shown to buyers."  # a trailing comment
    assert properties["stock"]["description"] == "Units in stock, by warehouse."
    assert properties["category"]["enum"] == ["CATEGORY_UNSPECIFIED", "BOOKS", "GAMES"]
    assert "- BOOKS: Printed or electronic books." in properties["category"]["description"]
    assert properties["views"]["type"] == ["string", "integer"]
    assert properties["code"] == {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
    assert properties["thumbnail"] == {"type": "string", "contentEncoding": "base64"}
    assert properties["createdAt"]["format"] == "date-time"
    assert properties["updateMask"]["type"] == "string"
    assert properties["attributes"] == {"type": "object"}
    assert properties["extra"] == {}
    assert properties["history"] == {"type": "array"}
    assert properties["note"]["type"] == ["string", "null"]
    assert properties["payload"]["required"] == ["@type"]
    assert "discount" in properties["percentOff"]["description"]
    assert properties["tree"] == {"$ref": "#/$defs/shop.v1.CategoryNode"}
    node = schema["$defs"]["shop.v1.CategoryNode"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/shop.v1.CategoryNode"}  # recursive
    money = schema["$defs"]["shop.v1.Money"]
    assert money["properties"]["currencyCode"]["description"] == "ISO 4217 code, e.g. EUR."
    assert money["properties"]["nanos"]["description"] == "Billionths of a unit."


REMOVED = object()
VALID_ITEM = {
    "id": "42",
    "title": "Dune",
    "price": {"currencyCode": "EUR", "units": "9223372036854775807", "nanos": 990000000},
    "category": "BOOKS",
    "tags": ["scifi"],
    "stock": {"paris": 3},
    "percentOff": 10,
    "createdAt": "2024-05-01T12:00:00Z",
    "shelfLife": "3600.5s",
    "attributes": {"colour": "red", "pages": 412},
    "updateMask": "title,price.units",
    "note": None,
    "sku": "",
    "thumbnail": "aGVsbG8=",
    "tree": {"label": "root", "children": [{"label": "leaf", "children": []}]},
    "views": 12,
    "rating": "NaN",
    "delta": "-5",
    "extra": [1, "two"],
    "history": [True],
    "payload": {"@type": "type.googleapis.com/shop.v1.Money", "units": "1"},
    "priceByDay": {"-3": {"units": 1}},
    "alsoIn": ["GAMES"],
    "big": "7",
}


@pytest.mark.parametrize(
    ("change", "why"),  # `why` names the rule in the test id
    [
        ({"id": REMOVED}, "id is required"),
        ({"unknown": 1}, "no such field"),
        ({"amountOff": {"units": 1}}, "percentOff and amountOff are one oneof"),
        ({"category": "FOOD"}, "not a value of the enum"),
        ({"category": 1}, "enums are names"),
        ({"views": "-1"}, "uint64 has no sign"),
        ({"delta": "12a"}, "int64 strings are digits"),
        ({"price": {"nanos": 2**31}}, "int32 bounds"),
        ({"createdAt": "yesterday"}, "Timestamp is RFC 3339"),
        ({"shelfLife": "5 minutes"}, "Duration is seconds with an s"),
        ({"stock": {"paris": "three"}}, "map values are typed"),
        ({"priceByDay": {"monday": {}}}, "int64 map keys are digits"),
        ({"tree": {"children": [{"colour": "red"}]}}, "recursive messages are closed too"),
        ({"payload": {"units": "1"}}, "Any needs @type"),
        ({"tags": "scifi"}, "repeated is an array"),
    ],
)
def test_item_schema_accepts_the_json_mapping_and_refuses_the_rest(
    shop: Service, change: dict[str, Any], why: str
) -> None:
    put = shop.operation("PutItem")
    assert put is not None
    check = _validator(put.input_schema)
    check.validate(VALID_ITEM)
    bad = {k: v for k, v in {**VALID_ITEM, **change}.items() if v is not REMOVED}
    with pytest.raises(ValidationError):
        check.validate(bad)


def test_output_schemas_describe_what_the_backend_prints(shop: Service) -> None:
    get = shop.operation("GetItem")
    assert get is not None and get.output_schema is not None
    output = get.output_schema
    assert "required" not in output  # answers need not carry what requests must
    check = _validator(output)
    check.validate({"id": "1", "category": 7, "views": "0", "rating": 0.0, "stock": {}})  # an enum value unknown here
    empty = shop.operation("Sleep")
    assert empty is not None and empty.output_schema is not None
    _validator(empty.output_schema).validate({})


def test_proto2_required_fields_and_groups_of_types() -> None:
    text = b"""
    syntax = "proto2";
    package legacy;
    // Old style.
    service Legacy { rpc Find(Query) returns (Answer); }
    message Query { required string name = 1; optional int32 limit = 2 [default = 10]; repeated uint64 ids = 3; }
    message Answer { optional string text = 1; }
    """
    service = import_protobuf("legacy.proto", content=text)
    assert (service.name, service.version) == ("legacy.Legacy", "0")
    find = service.operation("Find")
    assert find is not None
    assert find.input_schema["required"] == ["name"]
    assert find.input_schema["properties"]["ids"]["items"]["type"] == ["string", "integer"]


# --- every way in gives the same tools ------------------------------------------------------------------------------


def test_descriptor_sets_as_files_and_as_content_give_the_same_tools(shop: Service, tmp_path: Path) -> None:
    content = compile_protos([SHOP_PROTO], [str(PROTOS)])
    assert looks_like_descriptor_set(content) and not looks_like_protobuf(content)
    path = tmp_path / "shop.pb"
    path.write_bytes(content)
    from_file = import_protobuf(str(path))
    from_content = import_protobuf("shop.pb", content=content)
    assert _tools(from_file) == _tools(shop)
    assert _tools(from_content) == _tools(shop)
    assert from_file.description == shop.description
    assert [op.description for op in from_file.operations] == [op.description for op in shop.operations]


def test_an_upload_of_several_files_gives_the_same_tools(shop: Service) -> None:
    main = (PROTOS / SHOP_PROTO).read_bytes()
    assert looks_like_protobuf(main) and not looks_like_descriptor_set(main)
    extra = {
        "shop/v1/types.proto": (PROTOS / "shop/v1/types.proto").read_bytes(),
        "google/api/field_behavior.proto": (PROTOS / "google/api/field_behavior.proto").read_bytes(),
    }
    uploaded = import_protobuf("shop/v1/shop.proto", content=main, extra_files=extra)
    assert _tools(uploaded) == _tools(shop)
    assert uploaded.descriptors is not None


def test_server_reflection_gives_the_same_tools(shop: Service, server: RunningServer) -> None:
    url = f"grpc://{server.address}"
    reflected = import_protobuf(url, fetcher=loopback_fetcher())
    assert reflected.servers == (ServerTemplate(url),)
    assert (reflected.name, reflected.version) == (shop.name, shop.version)
    # Reflection carries no source comments: the schemas are the same but for descriptions.
    assert _without_descriptions(_tools(reflected)) == _without_descriptions(_tools(shop))
    assert [op.hints for op in reflected.operations] == [op.hints for op in shop.operations]
    assert [op.binding for op in reflected.operations] == [op.binding for op in shop.operations]


def test_reflection_of_nothing_listening_names_the_address() -> None:
    with pytest.raises(SpecError, match=r"no answer from a gRPC server at 127\.0\.0\.1:1 within 5 s"):
        import_protobuf("grpc://127.0.0.1:1", timeout_seconds=5, fetcher=loopback_fetcher())


def test_descriptors_hold_the_service_file_and_its_imports(shop: Service) -> None:
    from google.protobuf import descriptor_pb2

    assert shop.descriptors is not None
    files = descriptor_pb2.FileDescriptorSet.FromString(shop.descriptors)
    names = [f.name for f in files.file]
    assert names[-1] == SHOP_PROTO
    assert {"shop/v1/types.proto", "google/protobuf/timestamp.proto", "google/api/field_behavior.proto"} <= set(names)


# --- errors -------------------------------------------------------------------------------------------------------


def test_a_syntax_error_names_the_file_and_line() -> None:
    text = b'syntax = "proto3";\npackage broken;\n\nmessage A {\n  string name = 1\n}\n'
    with pytest.raises(SpecError, match=r"broken/a\.proto:6:1: Expected \";\"") as caught:
        import_protobuf("broken/a.proto", content=text)
    assert caught.value.source == "broken/a.proto"


def test_a_syntax_error_in_a_file_on_disk_names_it(tmp_path: Path) -> None:
    (tmp_path / "bad.proto").write_text('syntax = "proto3";\nmessage A { int32 x = ; }\n')
    with pytest.raises(SpecError, match=r"bad\.proto:2:"):
        import_protobuf(str(tmp_path / "bad.proto"))


def test_a_missing_import_is_named() -> None:
    text = b'syntax = "proto3";\nimport "common/types.proto";\nservice S { rpc M(A) returns (A); }\nmessage A {}\n'
    with pytest.raises(SpecError, match=r"common/types\.proto"):
        import_protobuf("main.proto", content=text)


def test_several_services_need_a_choice() -> None:
    text = (
        b'syntax = "proto3";\npackage two.v2beta;\n'
        b"service A { rpc M(E) returns (E); }\nservice B { rpc N(E) returns (E); }\nmessage E {}\n"
    )
    with pytest.raises(SpecError, match=r"several services \(two\.v2beta\.A, two\.v2beta\.B\)"):
        import_protobuf("two.proto", content=text)
    with pytest.raises(SpecError, match=r"no service 'C'; the services are: two\.v2beta\.A, two\.v2beta\.B"):
        import_protobuf("two.proto", content=text, service="C")
    by_short = import_protobuf("two.proto", content=text, service="B")
    by_full = import_protobuf("two.proto", content=text, service="two.v2beta.A")
    assert (by_short.name, by_short.version) == ("two.v2beta.B", "v2beta")
    assert by_full.name == "two.v2beta.A"
    assert [op.tool_name for op in by_full.operations] == ["M"]


def test_a_file_without_services_and_other_content_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="declares no service"):
        import_protobuf("m.proto", content=b'syntax = "proto3";\nmessage A {}\n')
    with pytest.raises(SpecError, match=r"neither \.proto source nor a binary protobuf FileDescriptorSet"):
        import_protobuf("x.json", content=b'{"openapi": "3.1.0"}')
    with pytest.raises(SpecError, match="no such file"):
        import_protobuf(str(tmp_path / "absent.proto"))
    with pytest.raises(SpecError, match=r"relative \.proto path"):
        import_protobuf("m.proto", content=b'syntax = "proto3";\n', extra_files={"../evil.proto": b""})


# --- the googleapis corpus ------------------------------------------------------------------------------------------


def _check_corpus_service(service: Service) -> None:
    names = [op.tool_name for op in service.operations]
    assert len(names) == len(set(names))
    for op in service.operations:
        assert TOOL_NAME.match(op.tool_name), op.tool_name
        Draft202012Validator.check_schema(op.input_schema)
        if op.output_schema is not None:
            Draft202012Validator.check_schema(op.output_schema)


@pytest.mark.parametrize("which", ["Publisher", "Subscriber", "google.pubsub.v1.SchemaService"])
def test_pubsub_imports(which: str) -> None:
    googleapis = corpus_path("proto", "googleapis")
    if which == "google.pubsub.v1.SchemaService":
        source = googleapis / "google/pubsub/v1/schema.proto"
    else:
        source = googleapis / "google/pubsub/v1/pubsub.proto"
    service = import_protobuf(str(source), include_paths=[str(googleapis)], service=which)
    assert service.version == "v1"
    assert service.description
    _check_corpus_service(service)
    if which == "Publisher":
        create = service.operation("CreateTopic")
        assert create is not None
        assert "name" in create.input_schema.get("required", [])
        publish = service.operation("Publish")
        assert publish is not None
        assert set(publish.input_schema["required"]) == {"topic", "messages"}
        message = publish.input_schema["$defs"]["google.pubsub.v1.PubsubMessage"]
        assert message["properties"]["data"]["contentEncoding"] == "base64"
        assert message["properties"]["publishTime"]["format"] == "date-time"
    if which == "Subscriber":
        streaming = service.operation("StreamingPull")
        assert streaming is not None and streaming.input_schema["required"] == ["messages"]


def test_pubsub_needs_a_service_choice() -> None:
    googleapis = corpus_path("proto", "googleapis")
    with pytest.raises(SpecError, match=r"google\.pubsub\.v1\.Publisher, google\.pubsub\.v1\.Subscriber"):
        import_protobuf(str(googleapis / "google/pubsub/v1/pubsub.proto"), include_paths=[str(googleapis)])


def test_firestore_imports() -> None:
    googleapis = corpus_path("proto", "googleapis")
    service = import_protobuf(str(googleapis / "google/firestore/v1/firestore.proto"), include_paths=[str(googleapis)])
    assert (service.name, service.version) == ("google.firestore.v1.Firestore", "v1")
    _check_corpus_service(service)
    get = service.operation("GetDocument")
    assert get is not None
    assert get.input_schema["required"] == ["name"]
    assert get.hints.read_only is None
    value = get.output_schema["$defs"]["google.firestore.v1.Value"]  # type: ignore[index]
    assert {"nullValue", "integerValue", "mapValue", "arrayValue"} <= value["properties"].keys()
    assert value["properties"]["nullValue"]["type"] == "null"
    assert "dependentSchemas" in value  # the value_type oneof
    listen = service.operation("Listen")
    assert listen is not None and "Bidirectional" in (listen.description or "")
    run_query = service.operation("RunQuery")
    assert run_query is not None and run_query.output_schema is not None
    assert run_query.output_schema["required"] == ["messages"]


def test_a_compiled_descriptor_set_offers_the_services_of_its_own_files_first() -> None:
    googleapis = corpus_path("proto", "googleapis")
    content = compile_protos([str(googleapis / "google/pubsub/v1/pubsub.proto")], [str(googleapis)])
    # pubsub.proto imports schema.proto, whose SchemaService is not what was compiled...
    with pytest.raises(
        SpecError, match=r"several services \(google\.pubsub\.v1\.Publisher, google\.pubsub\.v1\.Subscriber\)"
    ):
        import_protobuf("pubsub.protoset", content=content)
    # ...but can still be chosen by name
    schema_service = import_protobuf("pubsub.protoset", content=content, service="SchemaService")
    assert schema_service.name == "google.pubsub.v1.SchemaService"
    publisher = import_protobuf("pubsub.protoset", content=content, service="google.pubsub.v1.Publisher")
    create = publisher.operation("CreateTopic")
    assert create is not None and create.input_schema["required"] == ["name"]


def test_a_descriptor_set_whose_comments_look_like_proto_source_is_read_as_binary(tmp_path: Path) -> None:
    messages = "\n".join(f"message Example{i} {{ string name = 1; }}" for i in range(200))
    proto = tmp_path / "commented.proto"
    proto.write_text(
        f'syntax = "proto3";\npackage demo.v1;\n{messages}\nmessage Echo {{}}\n'
        "// Answers, as in:\n// message Answer { string text = 1; }\n"
        "service Pinger { rpc Ping(Echo) returns (Echo); }\n"
    )
    descriptors = compile_protos([str(proto)], [str(tmp_path)])
    assert looks_like_protobuf(descriptors)  # no NUL early on, and a comment line that reads like source
    service = import_protobuf("commented.protoset", content=descriptors)
    assert [op.tool_name for op in service.operations] == ["Ping"]


def test_protoc_lines_are_kept_and_other_output_goes_back_to_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    from apimcp.importers.protobuf.compile import _protoc_lines

    captured = b'a.proto:3:1: Expected ";".\nINFO: another request, with its headers\nb.proto: File not found.\n'
    assert _protoc_lines(captured) == 'a.proto:3:1: Expected ";".\nb.proto: File not found.'
    assert capfd.readouterr().err == "INFO: another request, with its headers\n"
