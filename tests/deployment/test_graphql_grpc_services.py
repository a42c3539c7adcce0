"""GraphQL and gRPC services through the control plane: imported, planned, exposed, called."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.support.graphql_server import SDL, graphql_server
from tests.support.grpc_certs import make_pki
from tests.support.grpc_server import PROTOS, SHOP_PROTO, ServerTls, descriptor_set, running_server

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory.mktemp("cp") / "data") as running:
        yield running


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with running_server() as server:
        yield server.address


@pytest.fixture(scope="module")
def library() -> Iterator[str]:
    with graphql_server() as endpoint:
        yield endpoint


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (args, result.output)
    return result


@pytest.fixture
def logged_in(live: Deployment) -> Deployment:
    run("login", live.base, "--token", live.api.http.headers["Authorization"].removeprefix("Bearer "))
    return live


async def call(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_a_graphql_schema_imported_and_exposed_with_the_cli(
    logged_in: Deployment, library: str, tmp_path: Path, mode: str
) -> None:
    schema = tmp_path / "library.graphql"
    schema.write_text(SDL)
    imported = json.loads(
        run("import", str(schema), "--name", "library", "--version", "1", "--backend", library, "-o", "json").output
    )
    assert imported["service"]["kind"] == "graphql"
    url = logged_in.base + imported["exposition"]["endpoints"][0]
    wait_until(lambda: logged_in.served(imported["exposition"]["endpoints"][0]))
    assert await call(url, mode, "echo", {"text": '") { x } #'}) == {"echo": '") { x } #'}


def test_a_graphql_schema_without_name_and_version_is_refused(logged_in: Deployment, tmp_path: Path) -> None:
    schema = tmp_path / "library.graphql"
    schema.write_text(SDL)
    refused = run("import", str(schema), code=1).output
    assert "give its name and version" in refused


@pytest.mark.parametrize("mode", MODES)
async def test_a_proto_with_imports_compiled_by_the_cli(logged_in: Deployment, shop: str, mode: str) -> None:
    proto = str(PROTOS / SHOP_PROTO)
    imported = json.loads(run("import", proto, "-I", str(PROTOS), "--backend", shop, "-o", "json").output)
    service = imported["service"]
    assert (service["name"], service["version"], service["kind"]) == ("shop.v1.ShopService", "v1", "grpc")
    endpoint = imported["exposition"]["endpoints"][0]
    wait_until(lambda: logged_in.served(endpoint))
    assert (await call(logged_in.base + endpoint, mode, "GetItem", {"id": "i7"}))["id"] == "i7"


def test_a_proto_whose_imports_cannot_be_found_is_refused_by_the_cli(logged_in: Deployment) -> None:
    refused = run("import", str(PROTOS / SHOP_PROTO), code=1).output
    assert "shop/v1/types.proto" in refused or "field_behavior" in refused


async def test_a_grpc_server_imported_by_reflection_needs_no_backend(live: Deployment, shop: str) -> None:
    service = live.api.call("POST", "/services", 201, json={"url": f"grpc://{shop}", "name": "reflected"})
    assert service["kind"] == "grpc"
    _, exposition = live.api.expose(service["id"], None, "reflected")  # type: ignore[arg-type]
    wait_until(lambda: live.served("/mcp/default/reflected"))
    assert (await call(f"{live.base}/mcp/default/reflected", "2026-07-28", "GetItem", {"id": "r1"}))["id"] == "r1"
    assert exposition["endpoints"][0] == "/mcp/default/reflected"


async def test_a_descriptor_set_upload_and_mutual_tls_from_a_tls_secret(live: Deployment) -> None:
    pki = make_pki()
    files = {"file": ("shop.protoset", descriptor_set(), "application/octet-stream")}
    service = live.api.call("POST", "/services", 201, files=files, data={"name": "secure-shop"})
    assert service["kind"] == "grpc"
    secret = live.api.call(
        "POST",
        "/secrets",
        201,
        json={
            "name": "shop-mtls",
            "kind": "tls",
            "fields": {"ca": pki.ca.cert_pem.decode()},
            "values": {"certificate": pki.client.cert_pem.decode(), "private_key": pki.client.key_pem.decode()},
        },
    )
    for response in (secret, live.api.call("GET", f"/secrets/{secret['id']}")):
        assert "PRIVATE KEY" not in json.dumps(response)
        assert pki.client.cert_pem.decode() not in json.dumps(response)
    tls = ServerTls(pki.server.cert_pem, pki.server.key_pem, client_ca_pem=pki.ca.cert_pem)
    with running_server(tls) as server:
        plan, _ = live.api.expose(
            service["id"], f"grpcs://localhost:{server.port}", "secure-shop", tls_secret_id=secret["id"]
        )
        assert plan["tls_secret_id"] == secret["id"]
        wait_until(lambda: live.served("/mcp/default/secure-shop"))
        answer = await call(f"{live.base}/mcp/default/secure-shop", "legacy", "GetItem", {"id": "s1"})
    assert answer["id"] == "s1"
    refused = live.api.call("DELETE", f"/secrets/{secret['id']}", 409)
    assert "secure-shop" in refused["detail"]


def test_plan_mistakes_name_the_field(live: Deployment) -> None:
    files = {"file": ("shop.protoset", descriptor_set(), "application/octet-stream")}
    grpc_service = live.api.call("POST", "/services", 201, files=files, data={"name": "checked-shop"})
    rest_service = live.api.import_echo(name="checked-echo")
    pki = make_pki()
    ca_only = live.api.call(
        "POST", "/secrets", 201, json={"name": "ca-only", "kind": "tls", "fields": {"ca": pki.ca.cert_pem.decode()}}
    )
    bearer = live.api.call(
        "POST", "/secrets", 201, json={"name": "not-tls", "kind": "bearer", "values": {"token": "t-1234"}}
    )
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"service_id": grpc_service["id"], "backend_endpoint": "http://x"}, "backend_endpoint", "host:port"),
        ({"service_id": rest_service["id"], "tls_secret_id": bearer["id"]}, "tls_secret_id", "of kind tls"),
        ({"service_id": grpc_service["id"], "secret_id": ca_only["id"]}, "secret_id", "tls_secret_id"),
    ]
    for body, field, words in cases:
        problem = live.api.call("POST", "/plans", 422, json={"name": "wrong", "backend_endpoint": None, **body})
        assert problem["field"] == field and words in problem["detail"], problem
    bad_pem = {"name": "bad", "kind": "tls", "fields": {"ca": "not a certificate"}}
    assert live.api.call("POST", "/secrets", 422, json=bad_pem)["field"] == "fields.ca"
    half = {"name": "half", "kind": "tls", "values": {"certificate": pki.client.cert_pem.decode()}}
    assert live.api.call("POST", "/secrets", 422, json=half)["field"] == "values.private_key"
    broken_ca = {
        "name": "b",
        "kind": "tls",
        "fields": {"ca": "-----BEGIN CERTIFICATE-----\nnot\n-----END CERTIFICATE-----"},
    }
    assert live.api.call("POST", "/secrets", 422, json=broken_ca)["field"] == "fields.ca"
    mismatched = {"certificate": pki.client.cert_pem.decode(), "private_key": pki.server.key_pem.decode()}
    problem = live.api.call("POST", "/secrets", 422, json={"name": "m", "kind": "tls", "values": mismatched})
    assert problem["field"] == "values.certificate" and "do not load" in problem["detail"]


def test_an_upload_is_never_read_from_the_control_planes_disk(live: Deployment) -> None:
    local = str(PROTOS / SHOP_PROTO)  # a file the control plane could read, named as the upload
    empty = live.api.call("POST", "/services", 422, files={"file": (local, b"", "text/plain")}, data={"kind": "grpc"})
    assert empty["detail"] == "the file is empty"
    junk = live.api.call(
        "POST", "/services", 422, files={"file": (local, b"junk", "text/plain")}, data={"kind": "grpc"}
    )
    assert "neither .proto source nor" in junk["detail"]


def test_a_reimport_cannot_change_the_kind_under_plans(live: Deployment) -> None:
    rest = live.api.import_echo(name="turncoat", version="1")
    live.api.call("POST", "/plans", 201, json={"name": "p", "service_id": rest["id"], "backend_endpoint": "http://x"})
    files = {"file": ("shop.protoset", descriptor_set(), "application/octet-stream")}
    refused = live.api.call("POST", "/services", 409, files=files, data={"name": "turncoat", "version": "1"})
    assert "cannot become a grpc service" in refused["detail"]


def test_an_api_key_a_grpc_backend_cannot_carry_is_refused(live: Deployment) -> None:
    files = {"file": ("shop.protoset", descriptor_set(), "application/octet-stream")}
    service = live.api.call("POST", "/services", 201, files=files, data={"name": "keyed-shop"})
    secret = live.api.call(
        "POST",
        "/secrets",
        201,
        json={
            "name": "query-key",
            "kind": "api_key",
            "fields": {"name": "key", "location": "query"},
            "values": {"value": "v"},
        },
    )
    body = {"name": "p", "service_id": service["id"], "backend_endpoint": "127.0.0.1:1", "secret_id": secret["id"]}
    problem = live.api.call("POST", "/plans", 422, json=body)
    assert problem["field"] == "secret_id" and "in the query cannot be sent" in problem["detail"]


def test_the_cli_reads_a_url_with_a_secret_and_refuses_one_for_a_file(logged_in: Deployment, shop: str) -> None:
    run("secret", "create", "shop-reader", "--kind", "bearer", "--value", "token=reflection-token")
    imported = json.loads(
        run("import", f"grpc://{shop}", "--name", "read-with-secret", "--secret", "shop-reader", "-o", "json").output
    )
    assert imported["service"]["kind"] == "grpc"
    assert "reflection-token" not in json.dumps(imported)
    refused = run("import", str(PROTOS / SHOP_PROTO), "--secret", "shop-reader", code=2).output
    assert "--secret authenticates reading a URL" in refused


def test_plan_tls_secret_by_cli(logged_in: Deployment, tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(make_pki().ca.cert_pem)
    run("secret", "create", "cli-ca", "--kind", "tls", "--field-file", f"ca={ca}")
    files = {"file": ("shop.protoset", descriptor_set(), "application/octet-stream")}
    service = logged_in.api.call("POST", "/services", 201, files=files, data={"name": "cli-tls-shop"})
    created = json.loads(
        run(
            "plan",
            "create",
            service["id"],
            "--name",
            "tls-plan",
            "--backend",
            "grpcs://localhost:1",
            "--tls-secret",
            "cli-ca",
            "--timeout-ms",
            "1500",
            "-o",
            "json",
        ).output
    )
    assert created["tls_secret_id"] is not None and created["backend_timeout_ms"] == 1500
    cleared = json.loads(run("plan", "update", created["id"], "--tls-secret", "", "-o", "json").output)
    assert cleared["tls_secret_id"] is None
    assert cleared["backend_timeout_ms"] == 1500  # what was not given is kept
