"""Importing descriptions by URL and by upload, within the URL safety rules."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator

import httpx2
import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from apimcp.catalog.codec import decode_service
from apimcp.control.models import Artifact, Service
from tests.control.api_harness import ECHO_API, Api, created, import_echo, ok, problem
from tests.control.factories import prompts
from tests.safety.test_yaml_schema import with_default
from tests.support.live_server import live_server

SPLIT_MAIN = b"""
openapi: 3.0.3
info: {title: Split, version: "1"}
servers: [{url: "https://split.example.com"}]
paths:
  /things:
    get:
      operationId: listThings
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {$ref: "schemas.yaml#/Thing"}}}
"""
SPLIT_SCHEMAS = b"Thing: {type: object, properties: {id: {type: string}}}\n"
PROMPTS = prompts("echo", "1")


def _document_with_ref(reference: str) -> bytes:
    return SPLIT_MAIN.replace(b"schemas.yaml#/Thing", reference.encode())


class Descriptions:
    """A web server publishing descriptions, one of which waits until released."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()

    def app(self) -> Starlette:
        async def echo(_: Request) -> Response:
            return Response(ECHO_API.read_bytes(), media_type="application/yaml")

        async def split(_: Request) -> Response:
            return Response(SPLIT_MAIN, media_type="application/yaml")

        async def schemas(_: Request) -> Response:
            return Response(SPLIT_SCHEMAS, media_type="application/yaml")

        async def artifact(_: Request) -> Response:
            return Response(PROMPTS, media_type="application/yaml")

        async def file_ref(_: Request) -> Response:
            return Response(_document_with_ref("file:///etc/passwd#/x"), media_type="application/yaml")

        async def to_file(_: Request) -> Response:
            return RedirectResponse("file:///etc/passwd", status_code=302)

        async def missing(_: Request) -> Response:
            return PlainTextResponse("no such thing", status_code=404)

        async def by_token(request: Request) -> Response:
            if request.query_params.get("token") != URL_TOKEN:  # the fetch itself sends the URL as given
                return PlainTextResponse("who are you?", status_code=403)
            named = PROMPTS if request.path_params["name"] == "prompts.yaml" else ECHO_API.read_bytes()
            return Response(named, media_type="application/yaml")

        async def slow(_: Request) -> Response:
            self.arrived.set()
            await asyncio.to_thread(self.release.wait, 20)
            return Response(ECHO_API.read_bytes(), media_type="application/yaml")

        return Starlette(
            routes=[
                Route("/echo.yaml", echo),
                Route("/split/main.yaml", split),
                Route("/split/schemas.yaml", schemas),
                Route("/artifacts/prompts.yaml", artifact),
                Route("/file-ref.yaml", file_ref),
                Route("/to-file.yaml", to_file),
                Route("/missing.yaml", missing),
                Route("/slow.yaml", slow),
                Route("/by-token/{name}", by_token),
            ]
        )


@pytest.fixture
def descriptions() -> Iterator[tuple[Descriptions, str]]:
    server = Descriptions()
    try:
        with live_server(server.app()) as base:
            yield server, base.replace("localhost", "127.0.0.1")
    finally:
        server.release.set()


def test_a_description_is_imported_from_a_url(api: Api, descriptions: tuple[Descriptions, str]) -> None:
    _, base = descriptions
    acme = api.org("acme")
    url = f"{base}/echo.yaml"
    service = created(acme.user.post("/services", json={"url": url, "name": "echo", "version": "7"}))
    assert (service["name"], service["version"], service["created"]) == ("echo", "7", True)
    assert service["operation_count"] == 16
    [main] = ok(acme.user.get(f"/services/{service['id']}/artifacts"))
    assert main["role"] == "main"
    assert main["source"] == url
    again = acme.user.post("/services", json={"url": url, "name": "echo", "version": "7"})
    assert again.status_code in (200, 201)
    assert again.json()["created"] is False
    assert again.json()["id"] == service["id"]


URL_TOKEN = "url-token-5f0c9a7e"


def test_an_import_url_s_token_or_password_is_never_recorded_or_shown(
    api: Api, descriptions: tuple[Descriptions, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Finding: the import URL was recorded as given (`?token=...`, `user:password@`), and the REST API, the CLI
    and the console showed it; its errors quoted it too."""
    _, base = descriptions
    acme = api.org("acme")
    url = f"{base}/by-token/echo.yaml?token={URL_TOKEN}&format=yaml"
    service = created(acme.user.post("/services", json={"url": url, "name": "echo", "version": "1"}))
    [main] = ok(acme.user.get(f"/services/{service['id']}/artifacts"))
    assert main["source"] == f"{base}/by-token/echo.yaml?token=***&format=***"  # it still says where it came from
    attached = f"{base}/by-token/prompts.yaml?token={URL_TOKEN}"
    artifact = created(acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": attached}))
    assert artifact["source"] == f"{base}/by-token/prompts.yaml?token=***"
    with api.plane.session() as session:
        stored = session.scalars(select(Artifact.source)).all()
        compiled = session.scalars(select(Service.compiled)).all()
    assert len(stored) == 2 and URL_TOKEN not in " ".join(str(source) for source in stored)
    assert [decode_service(data).source for data in compiled] == [main["source"]]
    refused = (f"{base}/missing.yaml?token={URL_TOKEN}", f"{base}/by-token/echo.yaml?token=wrong{URL_TOKEN}",
               base.replace("//", f"//alice:{URL_TOKEN}@") + "/echo.yaml")  # fmt: skip
    refusals = [problem(acme.user.post("/services", json={"url": url}), 422, "url") for url in refused]
    assert "missing.yaml?token=***: could not fetch it: HTTP 404" in refusals[0]["detail"]
    shown = " ".join(str(answer) for answer in refusals) + " ".join(str(v) for v in ok(acme.user.get("/services")))
    assert URL_TOKEN not in shown and URL_TOKEN not in caplog.text


def test_a_description_from_a_url_may_reference_its_neighbours(
    api: Api, descriptions: tuple[Descriptions, str]
) -> None:
    _, base = descriptions
    acme = api.org("acme")
    service = created(acme.user.post("/services", json={"url": f"{base}/split/main.yaml"}))
    assert (service["name"], service["operation_count"]) == ("Split", 1)
    detail = ok(acme.user.get(f"/services/{service['id']}"))
    assert [op["tool_name"] for op in detail["operations"]] == ["list_things"]


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "/etc/passwd",
        "../../etc/passwd",
        "ftp://ftp.example.com/api.yaml",
        "gopher://127.0.0.1:70/x",
        "data:application/yaml,openapi: 3.0.0",
        "",
    ],
)
def test_only_http_urls_are_fetched(api: Api, url: str) -> None:
    acme = api.org("acme")
    answer = problem(acme.user.post("/services", json={"url": url}), 422, "url")
    assert "http" in answer["detail"]
    assert "root:" not in answer["detail"]
    assert ok(acme.user.get("/services")) == []


def test_a_description_from_a_url_may_not_reference_local_files(
    api: Api, descriptions: tuple[Descriptions, str]
) -> None:
    _, base = descriptions
    acme = api.org("acme")
    answer = problem(acme.user.post("/services", json={"url": f"{base}/file-ref.yaml"}), 422, "url")
    assert "file:///etc/passwd" in answer["detail"]
    assert "root:" not in answer["detail"]
    assert ok(acme.user.get("/services")) == []


def test_a_redirect_to_a_local_file_is_refused(api: Api, descriptions: tuple[Descriptions, str]) -> None:
    _, base = descriptions
    acme = api.org("acme")
    answer = problem(acme.user.post("/services", json={"url": f"{base}/to-file.yaml"}), 422, "url")
    assert "redirect" in answer["detail"].lower()
    assert "root:" not in answer["detail"]
    assert ok(acme.user.get("/services")) == []


def test_an_unreachable_description_is_a_clear_problem(api: Api, descriptions: tuple[Descriptions, str]) -> None:
    _, base = descriptions
    acme = api.org("acme")
    assert "404" in problem(acme.user.post("/services", json={"url": f"{base}/missing.yaml"}), 422, "url")["detail"]
    with live_server(Starlette()) as gone:
        closed = gone.replace("localhost", "127.0.0.1")
    answer = problem(acme.user.post("/services", json={"url": f"{closed}/echo.yaml"}), 422, "url")
    assert "could not fetch" in answer["detail"]


@pytest.mark.parametrize(
    "reference",
    [
        "schemas.yaml#/Thing",
        "file:///etc/passwd#/x",
        "/etc/passwd#/x",
        "http://127.0.0.1:9/schemas.yaml#/Thing",
    ],
)
def test_an_upload_may_not_reference_other_documents(api: Api, reference: str) -> None:
    acme = api.org("acme")
    response = acme.user.post(
        "/services", files={"file": ("split.yaml", _document_with_ref(reference), "application/yaml")}
    )
    answer = problem(response, 422, "file")
    assert "references another document" in answer["detail"]
    assert "root:" not in answer["detail"]
    assert ok(acme.user.get("/services")) == []


def test_an_upload_may_use_references_within_itself(api: Api) -> None:
    acme = api.org("acme")
    document = _document_with_ref("#/components/schemas/Thing") + SPLIT_SCHEMAS.replace(
        b"Thing:", b"components:\n  schemas:\n    Thing:"
    )
    service = created(acme.user.post("/services", files={"file": ("self.yaml", document, "application/yaml")}))
    assert service["operation_count"] == 1


UNROOTED = b"""
openapi: 3.0.3
info: {title: Away, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  "@evil.example/steal":
    get:
      responses: {"200": {description: ok}}
"""


def test_an_imported_path_that_does_not_start_with_a_slash_is_refused(api: Api) -> None:
    """Finding: the path made https://api.example.com@evil.example/steal, where tool calls took the plan's key."""
    acme = api.org("acme")
    response = acme.user.post("/services", files={"file": ("away.yaml", UNROOTED, "application/yaml")})
    answer = problem(response, 422, "file")
    assert answer["detail"] == (
        "away.yaml at /paths/@evil.example~1steal: the path '@evil.example/steal' does not begin with '/', as a path "
        "must: appended to the server's URL it would change the host calls go to"
    )
    assert ok(acme.user.get("/services")) == []


SWAGGER_AT_ANOTHER_HOST = b"""
swagger: "2.0"
info: {title: Away, version: "1"}
host: api.example.com@evil.example
basePath: /v1
paths: {/x: {get: {responses: {"200": {description: ok}}}}}
"""
RELATIVE_SERVER = b"""
openapi: 3.1.0
info: {title: Away, version: "1"}
servers: [{url: api.example.com/v1}]
paths: {/x: {get: {responses: {"200": {description: ok}}}}}
"""


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (SWAGGER_AT_ANOTHER_HOST, "away.yaml at /host: host 'api.example.com@evil.example' is not a host name or IP "
         "address with an optional port"),
        (RELATIVE_SERVER, "away.yaml at /servers/0/url: the server URL 'api.example.com/v1' is relative"),
    ],
)  # fmt: skip
def test_an_uploaded_description_whose_server_is_not_a_usable_url_is_refused(
    api: Api, content: bytes, detail: str
) -> None:
    """Findings: a Swagger 2.0 host with a user name sent calls to evil.example; a relative server URL an upload
    cannot be resolved against made every call's URL invalid."""
    acme = api.org("acme")
    response = acme.user.post("/services", files={"file": ("away.yaml", content, "application/yaml")})
    assert problem(response, 422, "file")["detail"].startswith(detail)
    assert ok(acme.user.get("/services")) == []


def test_a_slow_url_import_does_not_hold_up_other_requests(api: Api, descriptions: tuple[Descriptions, str]) -> None:
    server, base = descriptions
    acme = api.org("acme")
    outcome: list[httpx2.Response] = []
    importer = threading.Thread(
        target=lambda: outcome.append(acme.user.post("/services", json={"url": f"{base}/slow.yaml", "name": "slow"}))
    )
    importer.start()
    try:
        assert server.arrived.wait(10), "the control plane never fetched the description"
        # while the control plane waits for the description, it still answers others
        assert ok(api.client(acme.user_token).get("/organization", timeout=5))["name"] == "acme"
        assert acme.snapshot("gw")["expositions"] == []
        assert importer.is_alive()
    finally:
        server.release.set()
        importer.join(30)
    assert created(outcome[0])["name"] == "slow"


def test_artifacts_are_attached_from_a_url_within_the_same_rules(
    api: Api, descriptions: tuple[Descriptions, str]
) -> None:
    _, base = descriptions
    acme, other = api.org("acme"), api.org("other")
    service = import_echo(acme.user)
    url = f"{base}/artifacts/prompts.yaml"
    artifact = created(acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": url}))
    assert (artifact["name"], artifact["role"], artifact["source"]) == ("prompts.yaml", "attached", url)
    assert artifact["content_hash"] == hashlib.sha256(PROMPTS).hexdigest()
    renamed = created(
        acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": url, "name": "overlay"})
    )
    assert renamed["name"] == "overlay"
    for refused in ("file:///etc/passwd", f"{base}/to-file.yaml", f"{base}/missing.yaml"):
        answer = problem(acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": refused}), 422)
        assert answer["field"] == "url" and "root:" not in answer["detail"]
    # another organization's service is not there, and nothing is fetched for it
    problem(other.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": url}), 404)
    names = sorted(a["name"] for a in ok(acme.user.get(f"/services/{service['id']}/artifacts")))
    assert names == ["echo-1-description", "overlay", "prompts.yaml"]


@pytest.mark.parametrize(
    ("written", "shown"),
    [("1" * 5_000, "1" * 24 + "… (5000 characters)"), ("0x" + "f" * 40, "0x" + "f" * 22 + "… (42 characters)")],
)
def test_an_integer_beyond_64_bits_is_refused_where_it_is_written(api: Api, written: str, shown: str) -> None:
    """Issue 21, L2: 5,000 digits were Python's 4,300-digit limit as a 500; a 160-bit default made orjson fail."""
    acme = api.org("acme")
    content = with_default(written)
    response = acme.user.post("/services", files={"file": ("huge.yaml", content, "application/yaml")})
    assert problem(response, 422, "file")["detail"] == (
        f"huge.yaml: the integer {shown} is out of range (at most 64 bits) (line 9, column 65)"
    )
    assert ok(acme.user.get("/services")) == []
