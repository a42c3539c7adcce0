"""The gateway's backend factory: one backend kind per service kind, shared connections and message classes."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.backends.credentials import ApiKey, Bearer
from apimcp.backends.graphql import GraphQLBackend
from apimcp.backends.grpc import GrpcBackend
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.gateway.backends import BackendFactory, credentials_of
from apimcp.importers.graphql import import_graphql
from apimcp.importers.openapi import import_openapi
from apimcp.importers.protobuf import import_protobuf
from tests.gateway.conftest import ECHO_SPEC
from tests.support.graphql_server import SDL
from tests.support.grpc_certs import Pki, make_pki
from tests.support.grpc_server import descriptor_set

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


def member(endpoint: str, tls: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "credentials": None,
        "backend_timeout_ms": 1000,
        "backend_endpoint": endpoint,
        "backend_tls": tls,
    }


async def test_each_kind_gets_its_backend_and_grpc_services_share_their_message_classes() -> None:
    session = new_session()
    factory = BackendFactory(session)
    try:
        rest = import_openapi(str(ECHO_SPEC))
        graphql = import_graphql("l.graphql", name="l", version="1", content=SDL.encode())
        shop = import_protobuf("shop.protoset", content=descriptor_set())
        assert isinstance(factory.build(rest, member("http://127.0.0.1:1")), RestBackend)
        assert isinstance(factory.build(graphql, member("http://127.0.0.1:1/graphql")), GraphQLBackend)
        first = factory.build(shop, member("127.0.0.1:1"))
        second = factory.build(shop, member("127.0.0.1:2"))
        assert isinstance(first, GrpcBackend) and isinstance(second, GrpcBackend)
        assert first.messages is second.messages  # built once per service, whatever the exposition
        factory.retain([first])
        assert factory.build(shop, member("127.0.0.1:1")).messages is first.messages
        factory.retain([])  # nothing served any more: let go
        assert factory.build(shop, member("127.0.0.1:1")).messages is not first.messages
    finally:
        await factory.close()
        await close_session(session)


async def test_http_backends_take_tls_settings_and_name_a_bad_ca(pki: Pki) -> None:
    session = new_session()
    try:
        rest = import_openapi(str(ECHO_SPEC))
        factory = BackendFactory(session)
        good = factory.build(rest, member("https://127.0.0.1:1", {"ca": pki.ca.cert_pem.decode()}))
        assert isinstance(good, RestBackend)
        with pytest.raises(ValueError, match="the TLS CA is not a usable PEM certificate"):
            factory.build(rest, member("https://127.0.0.1:1", {"ca": "-----BEGIN CERTIFICATE-----\nx\n"}))
    finally:
        await close_session(session)


def test_a_member_carries_a_list_of_credentials_or_the_single_object_of_older_control_planes() -> None:
    key = {"kind": "api_key", "fields": {"name": "X-Api-Key", "location": "header"}, "values": {"value": "k"}}
    client = {"kind": "api_key", "fields": {"name": "X-Client-Id"}, "values": {"value": "c"}}
    bearer = {"kind": "bearer", "fields": {}, "values": {"token": "t"}}
    assert credentials_of([key, client]) == [ApiKey("X-Api-Key", "k"), ApiKey("X-Client-Id", "c")]
    assert credentials_of(bearer) == [Bearer("t")]
    assert credentials_of(None) == credentials_of([]) == []


async def test_credentials_that_would_set_the_same_header_are_refused_when_the_backend_is_made() -> None:
    session = new_session()
    try:
        both = [{"kind": "bearer", "fields": {}, "values": {"token": "t"}},
                {"kind": "basic", "fields": {"username": "u"}, "values": {"password": "p"}}]  # fmt: skip
        with pytest.raises(ValueError, match="would both set the header 'Authorization'"):
            BackendFactory(session).build(import_openapi(str(ECHO_SPEC)), {**member("http://h"), "credentials": both})
    finally:
        await close_session(session)
