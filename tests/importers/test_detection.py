"""Which importer a description goes to, from its content alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from apimcp.importers.detection import detect_kind, kind_of_url
from apimcp.importers.protobuf import compile_protos
from tests.support.corpus import corpus_path

PROTOS = Path(__file__).resolve().parents[1] / "support" / "protos"
SHOP = PROTOS / "shop" / "v1" / "shop.proto"

SDL_WITH_ENUM = b'"""A library."""\nenum Genre {\n  SF\n}\n\ntype Query {\n  books(genre: Genre): [String!]!\n}\n'
INTROSPECTION = b'{"data": {"__schema": {"queryType": {"name": "Query"}, "types": []}}}'
PROTO = b'syntax = "proto3";\npackage shop.v1;\nenum Color { RED = 0; }\nmessage Item { string type = 1; }\n'


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n", "openapi"),
        (b'{"swagger": "2.0", "info": {}}', "openapi"),
        (b'{\n  "info": {"title": "x"},\n  "openapi": "3.0.3"\n}', "openapi"),
        (SDL_WITH_ENUM, "graphql"),
        (INTROSPECTION, "graphql"),
        (PROTO, "grpc"),
        (b"not a description at all", "openapi"),  # the OpenAPI importer explains what is missing
    ],
)
def test_kinds_are_told_apart(content: bytes, kind: str) -> None:
    assert detect_kind(content) == kind


def test_a_binary_descriptor_set_is_grpc() -> None:
    descriptors = compile_protos([str(SHOP)], [str(PROTOS)])
    assert detect_kind(descriptors) == "grpc"


def test_the_test_shop_proto_is_recognised() -> None:
    assert detect_kind(SHOP.read_bytes()) == "grpc"


def test_grpc_urls_name_their_kind() -> None:
    assert kind_of_url("grpc://127.0.0.1:50051") == "grpc"
    assert kind_of_url("grpcs://api.example.com:443") == "grpc"
    assert kind_of_url("https://api.example.com/graphql") is None


def test_real_descriptions_of_the_corpus_are_recognised() -> None:
    assert detect_kind(corpus_path("graphql", "github", "schema.graphql").read_bytes()) == "graphql"
    pubsub = corpus_path("proto", "googleapis", "google", "pubsub", "v1", "pubsub.proto")
    assert detect_kind(pubsub.read_bytes()) == "grpc"
