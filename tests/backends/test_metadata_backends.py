"""Backends may be internal, never a cloud metadata address: written as one in a plan, a configuration or a
description, or a name that resolves to one. Names are mapped to addresses by injected resolvers and every
connection attempt is recorded and refused, so nothing here ever leaves loopback."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohappyeyeballs
import aiohttp
import pytest

from apimcp.backends.base import BackendResult, Failure, JsonBody
from apimcp.backends.graphql import GraphQLBackend
from apimcp.backends.grpc import GrpcBackend, GrpcChannels
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.backends.targets import endpoint_problem
from apimcp.catalog.model import ServerTemplate, Service
from apimcp.importers.graphql import import_graphql
from apimcp.importers.openapi import import_openapi
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.addresses import IPAddress
from tests.control.api_harness import import_echo, problem
from tests.control.test_api_fetch_safety import control_plane
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import running_backend
from tests.support.graphql_server import SDL
from tests.support.grpc_server import PROTOS, SHOP_PROTO

pytestmark = pytest.mark.anyio

METADATA_URL = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
LITERALS = [
    "169.254.169.254",
    "[fd00:ec2::254]",
    "[fd20:ce::254]",
    "168.63.129.16",
    "[::ffff:169.254.169.254]",
    "100.100.100.200",
]
NAMES = {"metadata.test": "169.254.169.254", "wire.test": "168.63.129.16", "v6.test": "fd20:ce::254"}
REFUSED = "a cloud metadata address, which hands out the machine's own credentials"

ECHO = import_openapi(str(ECHO_SPEC))
LIBRARY = import_graphql("library.graphql", name="library", version="1", content=SDL.encode())
SHOP = import_protobuf(str(PROTOS / SHOP_PROTO), include_paths=[str(PROTOS)])


def resolving(table: dict[str, str]) -> Callable[[str, int], Sequence[IPAddress]]:
    """Test names to their addresses; any other name is loopback (an address stands for itself)."""

    def resolve(host: str, port: int) -> list[IPAddress]:
        try:
            return [ipaddress.ip_address(table.get(host, host).strip("[]"))]
        except ValueError:
            return [ipaddress.ip_address("127.0.0.1")]

    return resolve


def record_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The addresses aiohttp tries to connect to from now on; every attempt but to loopback fails at once."""
    tried: list[str] = []
    real = aiohappyeyeballs.start_connection

    async def recording(addr_infos: Sequence[Any], *args: Any, **kwargs: Any) -> socket.socket:
        hosts = [info[4][0] for info in addr_infos]
        tried.extend(hosts)
        if not all(ipaddress.ip_address(host).is_loopback for host in hosts):
            raise OSError("a test never connects outside loopback")
        return await real(addr_infos, *args, **kwargs)

    monkeypatch.setattr(aiohappyeyeballs, "start_connection", recording)
    return tried


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return record_attempts(monkeypatch)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    client = new_session(resolve=resolving(NAMES))
    yield client
    await close_session(client)


def refused(result: BackendResult) -> str:
    assert isinstance(result, Failure), result
    assert result.message.startswith("The backend is refused: "), result.message
    return result.message


async def rest_call(backend: RestBackend, tool: str = "get_item", **arguments: Any) -> BackendResult:
    operation = ECHO.operation(tool)
    assert operation is not None
    return await backend.call(operation, {"itemId": "1", **arguments})


@pytest.mark.parametrize("kind", ["openapi", "graphql"])
@pytest.mark.parametrize("host", LITERALS)
def test_a_plan_s_backend_may_point_at_cloud_metadata_addresses(kind: str, host: str) -> None:
    """Finding: `backend_endpoint = http://169.254.169.254/latest/meta-data/...` was accepted; it is refused where
    plans and configurations are written (both call `endpoint_problem`)."""
    problem = endpoint_problem(kind, f"http://{host}/latest/meta-data/")
    assert problem is not None and problem.startswith("the backend endpoint is refused: ")
    assert "a cloud metadata address" in problem


def test_a_plan_s_backend_may_point_at_cloud_metadata_addresses_through_the_rest_api(tmp_path: Path) -> None:
    """The finding as reported: a user token created a plan whose backend was the metadata service."""
    with control_plane(tmp_path) as api:
        acme = api.org("acme")
        service = import_echo(acme.user)
        for endpoint in (METADATA_URL, "http://[fd20:ce::254]/computeMetadata/v1/", "http://168.63.129.16/machine"):
            plan = {"service_id": service["id"], "name": "p", "backend_endpoint": endpoint}
            answer = problem(acme.user.post("/plans", json=plan), 422, "backend_endpoint")
            assert "a cloud metadata address" in answer["detail"]


@pytest.mark.parametrize(
    "endpoint",
    ["169.254.169.254:50051", "grpc://[fd00:ec2::254]:1", "grpcs://168.63.129.16:443", "ipv4:169.254.169.254:80"],
)
def test_a_plan_s_grpc_backend_may_point_at_cloud_metadata_addresses(endpoint: str) -> None:
    problem = endpoint_problem("grpc", endpoint)
    assert problem is not None and "a cloud metadata address" in problem


@pytest.mark.parametrize(
    ("kind", "endpoint"),
    [
        ("openapi", "http://10.0.0.8:8080/api"),
        ("openapi", "http://127.0.0.1:9/v1"),
        ("openapi", "https://metadata.test/"),  # a name: checked where it is resolved
        ("graphql", "http://[fd00::5]/graphql"),
        ("grpc", "10.1.2.3:50051"),
        ("grpc", "localhost:50051"),
    ],
)
def test_internal_backends_stay_allowed(kind: str, endpoint: str) -> None:
    assert endpoint_problem(kind, endpoint) is None


@pytest.mark.parametrize("host", LITERALS)
async def test_a_rest_backend_written_as_a_metadata_address_is_refused_before_connecting(
    host: str, session: aiohttp.ClientSession, attempts: list[str]
) -> None:
    backend = RestBackend(ECHO, session, base_url=f"http://{host}/latest/meta-data/")
    assert REFUSED in refused(await rest_call(backend))
    assert attempts == []


async def test_a_description_server_written_as_a_metadata_address_is_refused_before_connecting(
    session: aiohttp.ClientSession, attempts: list[str]
) -> None:
    service = Service(ECHO.name, ECHO.version, ECHO.operations, servers=(ServerTemplate(METADATA_URL),))
    assert REFUSED in refused(await rest_call(RestBackend(service, session)))
    assert attempts == []


@pytest.mark.parametrize(("name", "address"), NAMES.items())
async def test_a_rest_backend_whose_name_resolves_to_a_metadata_address_is_refused_before_connecting(
    name: str, address: str, session: aiohttp.ClientSession, attempts: list[str]
) -> None:
    backend = RestBackend(ECHO, session, base_url=f"http://{name}/latest/meta-data/")
    message = refused(await rest_call(backend))
    assert f"{name} resolves to a cloud metadata address" in message
    assert attempts == []


async def test_a_backend_name_that_resolves_to_an_internal_address_is_still_called(
    session: aiohttp.ClientSession, attempts: list[str]
) -> None:
    async with running_backend() as url:
        backend = RestBackend(ECHO, session, base_url=url.replace("127.0.0.1", "internal.test"))
        result = await rest_call(backend)
    assert isinstance(result, JsonBody), result
    assert attempts == ["127.0.0.1"]


async def test_a_graphql_backend_at_a_metadata_address_is_refused_before_connecting(
    session: aiohttp.ClientSession, attempts: list[str]
) -> None:
    operation = LIBRARY.operation("books")
    assert operation is not None
    for endpoint in ("http://169.254.169.254/graphql", "http://metadata.test/graphql"):
        result = await GraphQLBackend(LIBRARY, session, endpoint=endpoint).call(operation, {})
        assert "a cloud metadata address" in refused(result)
    assert attempts == []


@pytest.mark.parametrize("target", ["169.254.169.254:50051", "grpc://metadata.test:50051", "[fd20:ce::254]:1"])
async def test_a_grpc_backend_at_a_metadata_address_is_refused_before_its_channel_is_made(target: str) -> None:
    channels = GrpcChannels(resolve=resolving(NAMES))
    try:
        operation = SHOP.operation("GetItem")
        assert operation is not None
        result = await GrpcBackend(SHOP, channels, target=target).call(operation, {"id": "1"})
        assert "a cloud metadata address" in refused(result)
        assert len(channels) == 0  # grpc was never asked to connect
    finally:
        await channels.close()
