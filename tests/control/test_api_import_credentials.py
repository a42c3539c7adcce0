"""Importing descriptions that sit behind authentication: a secret read them, and goes nowhere else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.control.api_harness import ECHO_API, Api, Org, created, problem
from tests.support.graphql_server import guarded_app
from tests.support.grpc_server import running_server
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_server

TOKEN = "sesame-7f3a9c"
MAIN = b"""
openapi: 3.0.3
info: {title: Private, version: "1"}
servers: [{url: "https://private.example.com"}]
paths:
  /things:
    get:
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {$ref: "schemas.yaml#/Thing"}}}
"""


@dataclass
class Elsewhere:
    """Another origin, noting the Authorization headers it is sent."""

    seen: list[str | None] = field(default_factory=list)

    def app(self) -> Starlette:
        async def echo(request: Request) -> Response:
            self.seen.append(request.headers.get("authorization"))
            return Response(ECHO_API.read_bytes(), media_type="application/yaml")

        return Starlette(routes=[Route("/echo.yaml", echo)])


def private_app(elsewhere: str) -> Starlette:
    def guarded(content: bytes) -> object:
        async def endpoint(request: Request) -> Response:
            if request.headers.get("authorization") != f"Bearer {TOKEN}":
                return PlainTextResponse("who are you?", status_code=401)
            return Response(content, media_type="application/yaml")

        return endpoint

    async def away(request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return PlainTextResponse("who are you?", status_code=401)
        return RedirectResponse(f"{elsewhere}/echo.yaml", status_code=302)

    return Starlette(
        routes=[
            Route("/main.yaml", guarded(MAIN)),  # type: ignore[arg-type]
            Route("/schemas.yaml", guarded(b"Thing: {type: object}\n")),  # type: ignore[arg-type]
            Route("/away.yaml", away),
        ]
    )


@pytest.fixture
def sites() -> Iterator[tuple[str, Elsewhere]]:
    elsewhere = Elsewhere()
    with live_server(elsewhere.app()) as other_base:
        other = other_base.replace("localhost", "127.0.0.1")
        with live_server(private_app(other)) as base:
            yield base.replace("localhost", "127.0.0.1"), elsewhere


def _bearer(api: Api, org: str) -> tuple[Org, str]:
    acme = api.org(org)
    secret = created(acme.user.post("/secrets", json={"name": "reader", "kind": "bearer", "values": {"token": TOKEN}}))
    return acme, secret["id"]


def test_a_secret_reads_a_private_description_and_its_same_origin_references(
    api: Api, sites: tuple[str, Elsewhere]
) -> None:
    base, _ = sites
    acme, secret_id = _bearer(api, "acme")
    refused = problem(acme.user.post("/services", json={"url": f"{base}/main.yaml"}), 422, "url")
    assert "HTTP 401" in refused["detail"]
    service = created(acme.user.post("/services", json={"url": f"{base}/main.yaml", "secret_id": secret_id}))
    assert (service["name"], service["operation_count"]) == ("Private", 1)
    assert TOKEN not in str(service)


def test_a_redirect_to_another_origin_does_not_carry_the_secret(api: Api, sites: tuple[str, Elsewhere]) -> None:
    base, elsewhere = sites
    acme, secret_id = _bearer(api, "acme")
    created(acme.user.post("/services", json={"url": f"{base}/away.yaml", "secret_id": secret_id}))
    assert elsewhere.seen == [None]


def test_a_graphql_endpoint_is_introspected_with_a_secret(api: Api) -> None:
    acme, secret_id = _bearer(api, "acme")
    with live_aiohttp(lambda: guarded_app(TOKEN)) as base:
        body = {"url": f"{base}/graphql", "introspect": True, "name": "library", "version": "1"}
        refused = problem(acme.user.post("/services", json=body), 422, "url")
        assert "HTTP 401" in refused["detail"]
        service = created(acme.user.post("/services", json={**body, "secret_id": secret_id}))
    assert service["kind"] == "graphql"
    assert service["operation_count"] > 10


def test_reflection_carries_the_secret_as_metadata(api: Api) -> None:
    acme, secret_id = _bearer(api, "acme")
    with running_server() as server:
        body = {"url": f"grpc://{server.address}", "secret_id": secret_id}
        service = created(acme.user.post("/services", json=body))
    assert service["kind"] == "grpc"


def test_secrets_that_cannot_read_a_url_are_refused(api: Api) -> None:
    acme = api.org("acme")
    query_key = {
        "name": "q",
        "kind": "api_key",
        "fields": {"name": "key", "location": "query"},
        "values": {"value": "v"},
    }
    secret = created(acme.user.post("/secrets", json=query_key))
    answer = problem(
        acme.user.post("/services", json={"url": "http://127.0.0.1:9/x.yaml", "secret_id": secret["id"]}),
        422,
        "secret_id",
    )
    assert "cannot be used to read a description" in answer["detail"]
    beta = api.org("beta")
    foreign = problem(
        beta.user.post("/services", json={"url": "http://127.0.0.1:9/x.yaml", "secret_id": secret["id"]}), 404
    )
    assert "secret" in foreign["detail"]
