"""The standard gRPC health service (grpc.health.v1.Health): never chosen in place of a server's own API,
imported and called when named, and named in the message when a server offers nothing else."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from apimcp.importers.errors import SpecError
from apimcp.importers.protobuf import compile_protos, import_protobuf
from tests.gateway.conftest import gateway_of
from tests.support.fetching import loopback_fetcher
from tests.support.grpc_server import HEALTH_PROTO, HEALTH_SERVICE, PROTOS, SERVICE, running_server
from tests.support.live_server import live_app

ONLY_HEALTH = "offers no service of its own, only the standard grpc.health.v1.Health: name it to import it"


def test_the_health_service_is_imported_when_named_and_never_chosen_in_place_of_the_api() -> None:
    with running_server(health=True) as server:
        url = f"grpc://{server.address}"
        fetcher = loopback_fetcher()  # the test server listens on loopback
        chosen = import_protobuf(url, fetcher=fetcher)
        health = import_protobuf(url, service=HEALTH_SERVICE, fetcher=fetcher)
        by_short_name = import_protobuf(url, service="Health", fetcher=fetcher)
    assert chosen.name == SERVICE
    assert health.name == HEALTH_SERVICE
    assert health.version == "v1"
    assert [op.tool_name for op in health.operations] == ["Check", "Watch"]
    assert health.operations[0].input_schema["properties"]["service"]["type"] == "string"
    assert by_short_name.operations == health.operations


def test_a_server_offering_only_the_health_service_is_told_so_and_can_import_it() -> None:
    with running_server(shop=False, health=True) as server:
        url = f"grpc://{server.address}"
        fetcher = loopback_fetcher()
        with pytest.raises(SpecError, match=ONLY_HEALTH):
            import_protobuf(url, fetcher=fetcher)
        with pytest.raises(SpecError, match=r"there is no service 'shop'; the services are: grpc\.health\.v1\.Health"):
            import_protobuf(url, service="shop", fetcher=fetcher)
        health = import_protobuf(url, service=HEALTH_SERVICE, fetcher=fetcher)
    assert [op.tool_name for op in health.operations] == ["Check", "Watch"]


def test_a_health_proto_file_needs_the_service_named() -> None:
    descriptors = compile_protos([HEALTH_PROTO], [str(PROTOS)])
    with pytest.raises(SpecError, match=ONLY_HEALTH):
        import_protobuf("health.binpb", content=descriptors)
    assert import_protobuf("health.binpb", content=descriptors, service=HEALTH_SERVICE).name == HEALTH_SERVICE


@pytest.mark.anyio
async def test_the_health_service_is_called_through_the_gateway(tmp_path: Path) -> None:
    with running_server(health=True) as server:
        config = f"services:\n  health:\n    grpc: grpc://{server.address}\n    service: {HEALTH_SERVICE}\n"
        config += "server: {fetch_allow: [127.0.0.1]}\n"  # the test server listens on loopback
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            async with Client(f"{base}/mcp/health", mode="2026-07-28") as client:
                serving = await client.call_tool("Check", {})
                shop = await client.call_tool("Check", {"service": SERVICE})
                unknown = await client.call_tool("Check", {"service": "nope"})
    assert not serving.is_error and serving.structured_content == {"status": "SERVING"}
    assert shop.structured_content == {"status": "SERVING"}
    assert unknown.is_error
    first = unknown.content[0]
    assert isinstance(first, types.TextContent) and first.text.startswith("gRPC NOT_FOUND: unknown service nope")
