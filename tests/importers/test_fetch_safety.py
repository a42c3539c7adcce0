"""What importers read on someone's behalf: `$ref`s, GraphQL introspection and gRPC reflection reach only
what the fetch policy allows; YAML and JSON descriptions are bounded."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from apimcp.importers.errors import SpecError
from apimcp.importers.graphql import import_graphql
from apimcp.importers.openapi import import_openapi
from apimcp.importers.openapi.loading import parse
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.addresses import AddressPolicy, IPAddress
from apimcp.safety.fetch import Fetcher
from tests.safety.test_yaml_loading import alias_bomb, never_built
from tests.support.fetching import connections_to, counting_listener
from tests.support.grpc_server import running_server
from tests.support.live_aiohttp import live_aiohttp


def description(reference: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Public", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/things": {
                "get": {
                    "operationId": "listThings",
                    "responses": {
                        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": reference}}}}
                    },
                }
            }
        },
    }


def resolve_to(name: str, address: str) -> Any:
    def resolve(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address(address if host == name else host.strip("[]"))]

    return resolve


@pytest.fixture
def counted() -> Iterator[socket.socket]:
    with counting_listener() as listener:
        yield listener


def test_a_ref_to_an_internal_url_is_not_copied_into_the_tools() -> None:
    """A description on a public host (public.test, allowed by name here) references an internal document: the
    reference is refused, so the internal document never reaches tools/list."""
    internal_hits: list[str] = []

    async def secret(request: web.Request) -> web.Response:
        internal_hits.append(request.path)
        return web.json_response({"Thing": {"type": "object", "properties": {"aws_secret": {"const": "hunter2"}}}})

    def internal_app() -> web.Application:
        app = web.Application()
        app.router.add_get("/secret.json", secret)
        return app

    with live_aiohttp(internal_app) as internal:
        main = orjson.dumps(description(f"{internal}/secret.json#/Thing"))

        async def public_description(_: web.Request) -> web.Response:
            return web.Response(body=main, content_type="application/json")

        def public_app() -> web.Application:
            app = web.Application()
            app.router.add_get("/openapi.json", public_description)
            return app

        with live_aiohttp(public_app, host="127.0.0.2") as public:
            fetcher = Fetcher(AddressPolicy.allowing(["public.test"]), resolve=resolve_to("public.test", "127.0.0.2"))
            url = public.replace("127.0.0.2", "public.test") + "/openapi.json"
            with pytest.raises(SpecError) as caught:
                import_openapi(url, fetcher=fetcher)
    assert caught.value.source == f"{internal}/secret.json"
    assert caught.value.message.startswith("refused to fetch it: 127.0.0.1 is a loopback address")
    assert "hunter2" not in str(caught.value)
    assert internal_hits == []


def test_graphql_introspection_of_an_internal_endpoint_is_refused_before_posting(counted: socket.socket) -> None:
    port = counted.getsockname()[1]
    for host in ("127.0.0.1", "localhost", "[::ffff:127.0.0.1]"):
        with pytest.raises(SpecError, match=r"refused to introspect it: .* loopback address"):
            import_graphql(f"http://{host}:{port}/graphql", name="g", version="1", introspect=True)
    assert connections_to(counted) == 0


def test_grpc_reflection_of_an_internal_server_is_refused_before_connecting(counted: socket.socket) -> None:
    port = counted.getsockname()[1]
    for host in ("127.0.0.1", "localhost", "[::1]", "0.0.0.0"):
        with pytest.raises(SpecError, match="refused to reflect it: ") as caught:
            import_protobuf(f"grpc://{host}:{port}", timeout_seconds=2)
        assert "--fetch-allow" in caught.value.message
    assert connections_to(counted) == 0
    with pytest.raises(SpecError, match="cloud metadata address"):
        import_protobuf("grpcs://169.254.169.254:443", fetcher=Fetcher(AddressPolicy.allowing(["169.254.0.0/16"])))


def test_grpc_reflection_connects_to_the_checked_address() -> None:
    """reflect.test means nothing to the system's resolver: the channel can only reach the server through the
    address the policy checked (the target names it), while the name stays the channel's authority."""
    with running_server(host="127.0.0.2") as server:
        fetcher = Fetcher(AddressPolicy.allowing(["reflect.test"]), resolve=resolve_to("reflect.test", "127.0.0.2"))
        url = f"grpc://reflect.test:{server.port}"
        reflected = import_protobuf(url, fetcher=fetcher, timeout_seconds=10)
        assert reflected.name == "shop.v1.ShopService"
        assert reflected.servers[0].url == url  # the service keeps the name, not the address
        with pytest.raises(SpecError, match=r"reflect\.test resolves to a loopback address"):
            import_protobuf(url, timeout_seconds=2, fetcher=Fetcher(resolve=resolve_to("reflect.test", "127.0.0.2")))


def test_an_alias_bomb_description_is_refused_before_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    never_built(monkeypatch)
    with pytest.raises(SpecError, match=r"expands to more than \d+ bytes once its aliases are followed \(line"):
        parse(alias_bomb(), "bomb.yaml")


def test_a_recursive_alias_in_a_description_is_an_import_error() -> None:
    with pytest.raises(SpecError, match=r"\(a recursive alias\) \(line 1, column 10\)"):
        parse(b"openapi: &a [3.1.0, *a]\n", "loop.yaml")


def test_a_deeply_nested_json_description_is_refused() -> None:
    with pytest.raises(SpecError, match="nested deeper than 128 levels"):
        parse(b'{"a":' * 200 + b"1" + b"}" * 200, "deep.json")
    with pytest.raises(SpecError, match=r"introspection result|nested deeper"):
        import_graphql("deep.json", name="g", version="1", content=b'{"data":' * 200 + b"1" + b"}" * 200)
