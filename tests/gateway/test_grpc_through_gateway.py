"""A gRPC service served by the gateway, called with the official client in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.plan import plan_gateway
from tests.gateway.conftest import gateway_of
from tests.support.grpc_certs import make_pki
from tests.support.grpc_server import PROTOS, SHOP_PROTO, ServerTls, running_server
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


def shop_config(backend: str, extra: str = "") -> str:
    return f"""
services:
  shop:
    grpc: {PROTOS / SHOP_PROTO}
    include_paths: [{PROTOS}]
    backend: {backend}
    timeout: 2  # seconds: room for a loaded machine; Sleep below outlasts it
{extra}"""


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("grpc")
    with running_server() as server:
        config = shop_config(server.address, "    credentials: {type: bearer, token: {env: SHOP_TEST_TOKEN}}\n")
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SHOP_TEST_TOKEN", "t0ken-for-the-shop")
            with live_app(lambda: gateway_of(config, folder)) as base:
                yield f"{base}/mcp/shop"


@pytest.fixture(params=MODES)
async def client(shop_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(shop_url, mode=request.param) as connected:
        yield connected


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_methods_are_tools_with_descriptions_and_hints(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"GetItem", "PutItem", "ListItems", "SumLines", "Chat", "Fail", "Sleep", "WhoAmI"} <= set(tools)
    assert tools["GetItem"].description is not None and "Gets one item" in tools["GetItem"].description
    assert tools["GetItem"].annotations is not None and tools["GetItem"].annotations.read_only_hint is True
    assert tools["GetItem"].input_schema["required"] == ["id"]
    assert tools["SumLines"].input_schema["required"] == ["messages"]


async def test_a_unary_call_round_trips_the_json_mapping(client: Client) -> None:
    item = {
        "id": "i1",
        "title": "Lamp",
        "views": "18446744073709551615",
        "category": "GAMES",
        "createdAt": "2026-01-02T03:04:05Z",
        "shelfLife": "3.500s",  # as the JSON mapping prints it
        "stock": {"north": 3},
        "percentOff": 10,
    }
    result = await client.call_tool("PutItem", item)
    assert not result.is_error, text(result)
    stored = result.structured_content
    assert stored is not None
    assert {key: stored[key] for key in item} == item


async def test_server_streaming_is_collected_with_progress(client: Client) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await client.call_tool("ListItems", {"count": 3}, progress_callback=on_progress)
    assert not result.is_error, text(result)
    assert len(result.structured_content["messages"]) == 3  # type: ignore[index]
    assert seen == [1.0, 2.0, 3.0]


async def test_client_streaming_takes_a_list(client: Client) -> None:
    lines = [{"sku": "a", "quantity": "2"}, {"sku": "b", "quantity": "5"}]
    result = await client.call_tool("SumLines", {"messages": lines})
    assert not result.is_error, text(result)
    assert result.structured_content == {"quantity": "7", "lines": 2}


async def test_bidirectional_streaming_takes_a_list_and_answers_with_one(client: Client) -> None:
    result = await client.call_tool("Chat", {"messages": [{"text": "hi"}, {"text": "yo"}]})
    assert not result.is_error, text(result)
    assert len(result.structured_content["messages"]) == 2  # type: ignore[index]


async def test_a_failed_status_is_a_tool_error_with_code_and_details(client: Client) -> None:
    result = await client.call_tool("Fail", {"reason": "out of stock"})
    assert result.is_error
    assert text(result).startswith("gRPC ")
    assert "out of stock" in text(result)


async def test_the_plan_timeout_is_the_deadline(client: Client) -> None:
    result = await client.call_tool("Sleep", {"millis": 6000})
    assert result.is_error
    assert "DEADLINE_EXCEEDED" in text(result)


async def test_credentials_travel_as_metadata_and_are_never_shown(client: Client) -> None:
    result = await client.call_tool("WhoAmI", {})
    assert not result.is_error, text(result)
    # The server echoes the metadata: the token arrived, and its echo is masked.
    assert result.structured_content["metadata"]["authorization"] == "Bearer ***"  # type: ignore[index]
    assert "t0ken-for-the-shop" not in text(result)
    tools = await client.list_tools()
    assert "t0ken-for-the-shop" not in tools.model_dump_json()


async def test_mutual_tls_from_the_configuration(tmp_path: Path) -> None:
    pki = make_pki()
    for name, data in {"ca.pem": pki.ca.cert_pem, "client.pem": pki.client.cert_pem}.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "client-key.pem").write_bytes(pki.client.key_pem)
    tls = ServerTls(pki.server.cert_pem, pki.server.key_pem, client_ca_pem=pki.ca.cert_pem)
    with running_server(tls) as server:
        config = shop_config(
            f"grpcs://localhost:{server.port}",
            "    tls: {ca_file: ca.pem, certificate_file: client.pem, key_file: client-key.pem}\n",
        )
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            async with Client(f"{base}/mcp/shop", mode="2026-07-28") as connected:
                result = await connected.call_tool("GetItem", {"id": "i1"})
        without_certificate = shop_config(f"grpcs://localhost:{server.port}", "    tls: {ca_file: ca.pem}\n")
        with live_app(lambda: gateway_of(without_certificate, tmp_path)) as base:
            async with Client(f"{base}/mcp/shop", mode="2026-07-28") as connected:
                refused = await connected.call_tool("GetItem", {"id": "i1"})
    assert not result.is_error, text(result)
    assert result.structured_content["id"] == "i1"  # type: ignore[index]
    assert refused.is_error
    assert "UNAVAILABLE" in text(refused)


async def test_a_service_found_by_reflection_is_served_at_its_own_address(tmp_path: Path) -> None:
    with running_server() as server:
        config = f"services:\n  shop:\n    grpc: grpc://{server.address}\nserver: {{fetch_allow: [127.0.0.1]}}\n"
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            async with Client(f"{base}/mcp/shop", mode="legacy") as connected:
                result = await connected.call_tool("GetItem", {"id": "i9"})
    assert not result.is_error, text(result)
    assert result.structured_content["id"] == "i9"  # type: ignore[index]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    backend: http://127.0.0.1:1\n", "a gRPC backend is host:port"),
        ("    selections: {GetItem: '{ id }'}\n", "selections only applies to graphql services"),
        ("    tls: {certificate_file: c.pem}\n", "needs both certificate_file and key_file"),
    ],
)
def test_configuration_mistakes_are_named(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(f"services:\n  shop:\n    grpc: shop.proto\n{extra}", "gateway.yaml", tmp_path)


def test_a_tls_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    config = shop_config("grpcs://localhost:1", "    tls: {ca_file: missing-ca.pem}\n")
    with pytest.raises(ConfigError, match=r"missing-ca\.pem"):
        plan_gateway(parse_config(config, "gateway.yaml", tmp_path))
