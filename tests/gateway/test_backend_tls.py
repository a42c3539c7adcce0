"""TLS towards HTTP backends: a private CA and a client certificate, from the configuration's `tls` files."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from apimcp.backends.tls import TlsSettings, client_context
from tests.gateway.conftest import ECHO_SPEC, gateway_of
from tests.gateway.echo_backend import create_app
from tests.support.graphql_server import make_app as graphql_app
from tests.support.grpc_certs import Pki, make_pki
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


@pytest.fixture(scope="module")
def pem_files(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    files = {
        "ca.pem": pki.ca.cert_pem,
        "other-ca.pem": pki.other_ca.cert_pem,
        "client.pem": pki.client.cert_pem,
        "client-key.pem": pki.client.key_pem,
        "server.pem": pki.server.cert_pem,
        "server-key.pem": pki.server.key_pem,
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def server_context(folder: Path, *, client_certificates: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "server.pem", folder / "server-key.pem")
    if client_certificates:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(folder / "ca.pem")
    return context


@pytest.fixture(scope="module")
def mutual_echo(pem_files: Path) -> Iterator[str]:
    with live_aiohttp(create_app, tls=server_context(pem_files, client_certificates=True)) as base:
        yield base.replace("127.0.0.1", "localhost") + "/v1"


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def call_echo(backend: str, tls: str, folder: Path) -> types.CallToolResult:
    config = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: {backend}\n    timeout: 5\n    tls: {tls}\n"
    with live_app(lambda: gateway_of(config, folder)) as base:
        async with Client(f"{base}/mcp/echo", mode="2026-07-28") as client:
            return await client.call_tool("get_item", {"itemId": "1"})


async def test_a_rest_backend_behind_mutual_tls(mutual_echo: str, pem_files: Path) -> None:
    files = "{ca_file: ca.pem, certificate_file: client.pem, key_file: client-key.pem}"
    result = await call_echo(mutual_echo, files, pem_files)
    assert not result.is_error, text(result)
    assert result.structured_content["path"] == "/v1/items/1"  # type: ignore[index]


async def test_an_untrusted_backend_certificate_is_named(mutual_echo: str, pem_files: Path) -> None:
    files = "{ca_file: other-ca.pem, certificate_file: client.pem, key_file: client-key.pem}"
    result = await call_echo(mutual_echo, files, pem_files)
    assert result.is_error
    assert text(result).startswith("The backend's TLS certificate is not trusted (localhost:")


async def test_a_missing_client_certificate_is_a_clear_failure(mutual_echo: str, pem_files: Path) -> None:
    result = await call_echo(mutual_echo, "{ca_file: ca.pem}", pem_files)
    assert result.is_error
    # TLS 1.3 tells the client after the handshake: an alert, or just a closed connection, by timing
    assert "(localhost:" in text(result)
    assert "certificate" in text(result).lower()


async def test_a_graphql_backend_with_a_private_ca(pem_files: Path) -> None:
    from tests.support.graphql_server import SDL

    (pem_files / "library.graphql").write_text(SDL)
    with live_aiohttp(graphql_app, tls=server_context(pem_files, client_certificates=False)) as base:
        endpoint = base.replace("127.0.0.1", "localhost") + "/graphql"
        config = (
            f"services:\n  library:\n    graphql: library.graphql\n    name: l\n    version: '1'\n"
            f"    backend: {endpoint}\n    tls: {{ca_file: ca.pem}}\n"
        )
        with live_app(lambda: gateway_of(config, pem_files)) as gateway:
            async with Client(f"{gateway}/mcp/library", mode="legacy") as client:
                result = await client.call_tool("echo", {"text": "over TLS"})
    assert result.structured_content == {"echo": "over TLS"}


def test_unusable_pem_texts_are_named(pki: Pki) -> None:
    with pytest.raises(ValueError, match="the TLS CA is not a usable PEM certificate"):
        client_context(TlsSettings(ca_pem=b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"))
    with pytest.raises(ValueError, match="the TLS client certificate and key do not load"):
        client_context(TlsSettings(client_cert_pem=pki.client.cert_pem, client_key_pem=pki.server.key_pem))
