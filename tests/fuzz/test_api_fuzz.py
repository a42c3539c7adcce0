"""Random requests to every operation of the control plane's REST API, for a bounded number of requests.

The API is served for real (uvicorn on loopback) from a control plane on SQLite, seeded with a
service, a plan, an exposition, a group and a secret so that generated ids sometimes name real
objects. Every operation of the API's own OpenAPI document is called with path, query and body
values from its schemas (or anything at all), with tokens of every kind or none. Whatever comes in,
the API answers without a 5xx, every refusal is an RFC 9457 problem, and nothing is logged as an
error. Fetches are never made to anything but loopback: every URL the generator writes is replaced
by one of a few loopback URLs before it is sent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apimcp.control.api.app import create_api
from apimcp.control.crypto import KeySet
from apimcp.control.domain import orgs, tokens
from apimcp.control.plane import ControlPlane
from apimcp.control.store import open_store
from tests.control.api_harness import ECHO_API, import_echo
from tests.fuzz.error_records import ErrorRecords
from tests.fuzz.strategies import conforming, deep, values
from tests.support.live_server import live_server

EXAMPLES = int(os.environ.get("APIMCP_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("APIMCP_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROBLEM = "application/problem+json"
# Where generated URLs point instead: loopback only, closed ports or this very API, in several spellings.
LOOPBACK_URLS = (
    "http://127.0.0.1:9/openapi.yaml",
    "http://localhost:1/",
    "http://0x7f000001:9/x",
    "http://[::1]:9/x",
    "grpc://127.0.0.1:9",
    "https://127.0.0.1:9/graphql",
)


@dataclass
class Operation:
    method: str
    path: str
    parameters: list[dict[str, Any]]
    body_schema: dict[str, Any] | None
    multipart: bool


@dataclass
class Api:
    base: str
    http: httpx2.Client
    operations: list[Operation]
    schemas: dict[str, Any]
    tokens: dict[str, str]
    ids: list[str]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, errors: ErrorRecords) -> Iterator[Api]:
    folder: Path = tmp_path_factory.mktemp("api-fuzz")
    store = open_store(f"sqlite:///{folder / 'apimcp.db'}")
    plane = ControlPlane(store, KeySet.generate())
    with plane.session() as session:
        organization = orgs.create(session, "fuzz")
        issued = {kind: tokens.issue(session, organization.id, kind, kind)[1] for kind in tokens.KINDS}
    app = create_api(plane)
    try:
        with live_server(app) as base, httpx2.Client(base_url=f"{base}/api/v1", timeout=30) as http:
            any_token = next(iter(issued.values()))
            admin = httpx2.Client(base_url=f"{base}/api/v1", timeout=30, headers=_auth(_most_powerful(issued)))
            ids = _seed(admin)
            admin.close()
            document = http.get("/openapi.json").json()
            yield Api(base, http, _operations(document), document["components"]["schemas"], issued, ids)
            assert any_token
    finally:
        store.dispose()
        errors.records.clear()


def _most_powerful(issued: dict[str, str]) -> str:
    return issued.get("admin") or issued["user"]


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _seed(client: httpx2.Client) -> list[str]:
    """A service, a plan, a group, an exposition and a secret; their ids."""
    service = import_echo(client)
    plan = client.post("/plans", json={"service_id": service["id"], "name": "p", "backend_endpoint": "http://x.test"})
    group = client.post("/gateway-groups", json={"name": "g", "labels": {}})
    secret = client.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "t0ps3cret"}})
    found = [service["id"]]
    found.extend(
        response.json().get("id") or response.json().get("plan", {}).get("id")
        for response in (plan, group, secret)
        if response.status_code == 201
    )
    if plan.status_code == 201:
        plan_id = plan.json().get("id") or plan.json()["plan"]["id"]
        exposition = client.post("/expositions", json={"plan_id": plan_id, "name": "e"})
        if exposition.status_code == 201:
            found.append(exposition.json()["id"])
    return [i for i in found if isinstance(i, str)]


def _operations(document: dict[str, Any]) -> list[Operation]:
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema")
            parameters = [p for p in operation.get("parameters", []) if p["in"] in ("path", "query")]
            found.append(
                Operation(
                    method.upper(), path.removeprefix("/api/v1"), parameters, schema, "multipart/form-data" in content
                )
            )
    return found


def loopback_only(value: Any, draw: st.DrawFn) -> Any:
    """`value` with every string that could be a URL replaced by a loopback URL."""
    if isinstance(value, str) and ("://" in value or ":" in value[:10]):
        return draw(st.sampled_from(LOOPBACK_URLS))
    if isinstance(value, list):
        return [loopback_only(item, draw) for item in value]
    if isinstance(value, dict):
        return {
            key: draw(st.sampled_from(LOOPBACK_URLS)) if "url" in str(key).lower() else loopback_only(item, draw)
            for key, item in value.items()
        }
    return value


@FUZZ
@given(data=st.data())
def test_random_api_requests_get_problems_and_never_a_server_error(api: Api, errors: ErrorRecords, data: Any) -> None:
    draw = data.draw
    operation = draw(st.sampled_from(api.operations))
    path = operation.path
    query: dict[str, str] = {}
    for parameter in operation.parameters:
        value = draw(st.sampled_from(api.ids) | st.text(min_size=1, max_size=20) | st.integers().map(str))
        if parameter["name"] == "since":
            value = str(draw(st.integers(-1000, 0)))  # a larger one waits for changes (a long poll)
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", quote(value, safe="") or "x")
        elif draw(st.booleans()):
            query[parameter["name"]] = value
    token = draw(st.sampled_from([*api.tokens.values(), None, "apimcp_user_forged"]))
    headers = _auth(token) if token is not None else {}
    content: bytes | None = None
    files: Any = None
    form: Any = None
    shape = draw(st.sampled_from(["schema"] * 5 + ["any", "deep", "bytes"]))
    if operation.path == "/services" and operation.method == "POST":
        if draw(st.booleans()):
            upload = draw(st.sampled_from([ECHO_API.read_bytes(), b"", b"openapi: 3.0.0"]) | st.binary(max_size=300))
            files = {"file": ("x.yaml", upload, "application/yaml")}
            form = draw(
                st.dictionaries(st.sampled_from(["name", "version", "kind", "graphql_depth"]), st.text(max_size=8))
            )
        else:
            body = {"url": draw(st.sampled_from(LOOPBACK_URLS))} | draw(
                st.dictionaries(st.sampled_from(["name", "version", "kind", "introspect"]), values, max_size=3)
            )
            content, headers["Content-Type"] = orjson.dumps(loopback_only(body, draw)), "application/json"
    elif operation.multipart:
        files = {"file": ("a.yaml", draw(st.binary(max_size=300)), "application/yaml")}
    elif operation.body_schema is not None or shape == "bytes":
        if shape == "schema" and operation.body_schema is not None:
            body = loopback_only(draw(conforming(operation.body_schema, api.schemas)), draw)
        elif shape == "deep":
            body = draw(deep)
        else:
            body = loopback_only(draw(values), draw)
        content = draw(st.binary(max_size=200)) if shape == "bytes" else orjson.dumps(body)
        headers["Content-Type"] = draw(
            st.sampled_from(["application/json"] * 4 + ["text/plain", "application/x-www-form-urlencoded"])
        )
    response = api.http.request(
        operation.method, path, params=query, headers=headers, content=content, files=files, data=form
    )
    logged, errors.records = errors.records, []
    assert not logged, [errors.format(r) for r in logged]
    assert response.status_code < 500, f"{operation.method} {path}: HTTP {response.status_code} {response.text[:500]}"
    if response.status_code >= 400:
        assert response.headers.get("content-type", "").startswith(PROBLEM), response.text[:300]
        problem = response.json()
        assert problem["status"] == response.status_code and problem["title"] and problem["detail"], problem
