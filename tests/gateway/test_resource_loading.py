"""Reading resources from an exposition's backend: the path as sent, what the backend's answers become, and
that a `file://` URI never takes the plan's credentials to another host."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from apimcp.artifacts.resources import ContentLoader, ContentMissing, Loaded, ResourceCatalog, ResourceUnavailable
from apimcp.backends.base import Backend, BackendResult, BinaryBody, Failure, JsonBody, Progress, TextBody
from apimcp.backends.credentials import ApiKey
from apimcp.backends.oauth_client import TokenSession
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.catalog.model import Operation, RestBinding
from apimcp.gateway.member_backends import MemberBackend
from apimcp.gateway.resource_loading import BackendLoader
from apimcp.importers.openapi import import_openapi
from apimcp.protocol.caller import NO_SOURCE
from apimcp.protocol.errors import ResourceNotFound
from apimcp.safety.addresses import AddressPolicy
from tests.gateway.conftest import ECHO_SPEC, gateway_of
from tests.gateway.hostile_backend import Recorder, hostile_backend

pytestmark = pytest.mark.anyio

SECRET = "plan-api-key-never-elsewhere"
NO_REQUEST: Any = SimpleNamespace(source=NO_SOURCE)
"""A request's context as a read with a header policy sees it: its source (no client header, no caller)."""


class Answering(Backend):
    def __init__(self, answer: BackendResult) -> None:
        self.answer = answer
        self.paths: list[str] = []

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        assert isinstance(operation.binding, RestBinding) and operation.binding.method == "GET"
        self.paths.append(operation.binding.path)
        return self.answer


def loader_of(*backends: Backend, remote: TokenSession | None = None) -> ContentLoader:
    """What a read of a request with nothing to pass on (no header policy, no user's credentials) reads with."""
    members = [MemberBackend(backend) for backend in backends]
    return BackendLoader(members, remote or TokenSession()).for_request(NO_REQUEST)


async def _read(path: str, answer: BackendResult) -> tuple[Loaded, list[str]]:
    backend = Answering(answer)
    return await loader_of(backend).backend_file(path, 0), backend.paths


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/docs/a.md", "/docs/a.md"),
        ("/items/a?verbose=true", "/items/a?verbose=true"),  # a template's query goes along
        ("/books/{1} x", "/books/%7B1%7D%20x"),  # what a path may not hold is sent encoded
        ("/caf%C3%A9", "/caf%C3%A9"),  # already encoded stays as it is
        ("/a#fragment", "/a"),
    ],
)
async def test_the_path_is_sent_as_a_uri_path(path: str, sent: str) -> None:
    _, paths = await _read(path, TextBody("x", "text/plain"))
    assert paths == [sent]


async def test_answers_become_contents_with_their_media_type() -> None:
    assert (await _read("/a", JsonBody({"a": 1}, '{"a":1}')))[0] == Loaded(b'{"a":1}', "application/json")
    assert (await _read("/a", TextBody("# T", "text/markdown")))[0] == Loaded(b"# T", "text/markdown")
    png = BinaryBody(b"\x89PNG", "image/png", "http://backend/a")
    assert (await _read("/a", png))[0] == Loaded(b"\x89PNG", "image/png")


async def test_a_404_is_missing_content_and_other_failures_are_unavailable() -> None:
    with pytest.raises(ContentMissing):
        await _read("/a", Failure("HTTP 404 Not Found", 404))
    with pytest.raises(ResourceUnavailable, match="HTTP 500"):
        await _read("/a", Failure("HTTP 500 Internal Server Error", 500))


async def test_without_a_backend_nothing_is_read() -> None:
    with pytest.raises(ResourceUnavailable, match="does not serve files"):
        await loader_of().backend_file("/a", 0)


# --- the backend's origin, and nothing else ----------------------------------------------------------


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    """The plan's backend, and an attacker's server on another loopback port: both record what reaches them."""
    with hostile_backend() as backend, hostile_backend() as attacker:
        yield backend, attacker


@pytest.fixture
async def loader(servers: tuple[Recorder, Recorder]) -> AsyncIterator[ContentLoader]:
    """A loader over the real REST backend of a plan that carries an api_key secret."""
    backend, attacker = servers
    backend.seen.clear()
    attacker.seen.clear()
    session = new_session()
    origin = backend.url.removesuffix("/v1")  # a backend URL without a path: what follows it extends its host
    rest = RestBackend(
        import_openapi(str(ECHO_SPEC)), session, base_url=origin, credentials=ApiKey("X-Api-Key", SECRET)
    )
    try:
        yield loader_of(rest)
    finally:
        await close_session(session)


async def test_file_resource_path_cannot_change_the_host(
    servers: tuple[Recorder, Recorder], loader: ContentLoader
) -> None:
    """Finding H1: `file://@host:port/x` was read at http://<backend>@host:port/x with the plan's X-Api-Key."""
    backend, attacker = servers
    elsewhere = attacker.url.removeprefix("http://").removesuffix("/v1")  # 127.0.0.1:PORT
    hostile = [
        f"file://@{elsewhere}/steal",
        f"file://%40{elsewhere}/steal",
        f"file://:{elsewhere.rsplit(':', 1)[1]}/steal",  # another port of the backend's host
        f"file:////{elsewhere}/steal",
        f"file:///%2F%2F{elsewhere}/steal",
        f"file:///%2f%2f{elsewhere}/steal",
        f"file:///%252F%252F{elsewhere}/steal",
        f"file:///\\{elsewhere}/steal",
        f"file:///%5C%5C{elsewhere}/steal",
        "file:///docs/%2E%2E/admin",
        "file:///docs/\t/admin",
        "file:///docs/..;/admin",  # issue 21, L4: dot segments as Java, Windows and normalizing servers read them
        "file:///docs/\uff0e\uff0e/admin",
        "file:///docs/..%20/admin",
        "file:///docs/a%2Fb",
    ]
    # documents attached before the check, as a snapshot would still carry them, and templates a client expands
    catalog = ResourceCatalog(
        {uri: {"name": f"static {index}"} for index, uri in enumerate(hostile)},
        {"file://{+rest}": {"name": "any host"}, "file:///{+rest}": {"name": "any path"}},
    )
    expansions = [f"file://@{elsewhere}/steal", f"file://.{elsewhere}/steal", f"file:////{elsewhere}/x"]
    answers = {
        uri: await _outcome(catalog, uri, loader) for uri in [*hostile, *expansions, *(u + "?x" for u in hostile)]
    }
    assert (
        attacker.seen == []
    )  # before the fix: GET /steal with X-Api-Key and a Basic header made of the backend's host
    assert backend.seen == []
    for uri, answer in answers.items():
        assert isinstance(answer, ResourceNotFound), uri
        assert answer.uri == uri
        assert re.fullmatch(rf"Resource not found: {re.escape(uri)} \(.*file://.*\)", answer.message), answer.message
    # the same plan reads a plain path, with its key: the backend is the only place the key goes
    read = await catalog.read("file:///v1/echo", loader)
    assert read.contents[0].uri == "file:///v1/echo"
    assert [(r["target"], r["headers"]["X-Api-Key"]) for r in backend.seen] == [("/v1/echo", SECRET)]
    assert attacker.seen == []


async def _outcome(catalog: ResourceCatalog, uri: str, loader: ContentLoader) -> object:
    """What the read gave: its result, or what it raised (before the fix, some URIs broke aiohttp's URL parser)."""
    try:
        return await catalog.read(uri, loader)
    except Exception as exc:  # every outcome is compared by the caller
        return exc


@pytest.mark.parametrize("path", ["@127.0.0.1:9999/steal", ".evil.example/x", "//evil.example/x", "/a/%2e%2e/b"])
async def test_the_loader_refuses_a_path_outside_the_backend_before_any_request(path: str) -> None:
    backend = Answering(TextBody("x", "text/plain"))
    with pytest.raises(ResourceUnavailable, match="file://"):
        await loader_of(backend).backend_file(path, 0)
    assert backend.paths == []


async def test_remote_content_goes_through_the_fetch_policy_and_follows_no_redirect(
    servers: tuple[Recorder, Recorder],
) -> None:
    """The other way a resource read reaches a host: `remoteContent`, never with the plan's credentials."""
    backend, attacker = servers
    attacker.seen.clear()
    default, allowing = TokenSession(), TokenSession(AddressPolicy.allowing(["127.0.0.1"]))
    try:
        internal = loader_of(remote=default)  # the default policy: public addresses only
        loopback_by_name = attacker.url.replace("127.0.0.1", "localhost")
        for url in (f"{attacker.url}/card.html", f"{loopback_by_name}/card.html"):
            with pytest.raises(ResourceUnavailable, match="the content's address is refused"):
                await internal.remote(url)
        with pytest.raises(ResourceUnavailable, match=r"127\.0\.0\.1:\d+ answered HTTP 302"):
            await loader_of(remote=allowing).remote(f"{backend.url}/away?to={attacker.url}/card.html")
    finally:
        await default.close()
        await allowing.close()
    assert attacker.seen == []
    assert [request["headers"].get("X-Api-Key") for request in backend.seen[-1:]] == [None]


# --- an exposition of several services ----------------------------------------------------------


def _resources_file(service: str, resources: Sequence[str], templates: Sequence[str] = ()) -> str:
    listed = "".join(f"  {uri}: {{name: {service} {index}}}\n" for index, uri in enumerate(resources))
    templated = "".join(f"  {uri}: {{name: {service} template}}\n" for uri in templates)
    return (
        f"apiVersion: reshapr.io/v1alpha1\nkind: Resources\nservice: {{name: {service}, version: '2.1'}}\n"
        f"resources:\n{listed}" + (f"resourceTemplates:\n{templated}" if templates else "")
    )


async def test_a_file_resource_is_read_with_the_backend_of_the_service_that_declared_it(
    servers: tuple[Recorder, Recorder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding: in an exposition of services [alpha, beta], beta's Resources file was read from alpha's backend,
    with alpha's credentials."""
    alpha, beta = servers
    alpha.seen.clear()
    beta.seen.clear()
    monkeypatch.setenv("ALPHA_KEY", "alpha-key-for-alpha-only")
    monkeypatch.setenv("BETA_KEY", "beta-key-for-beta-only")
    # the first declaration of a URI wins, whichever service's file holds the second
    (tmp_path / "alpha.yaml").write_text(_resources_file("alpha", ["file:///echo?of=alpha", "file:///echo?of=both"]))
    (tmp_path / "beta.yaml").write_text(
        _resources_file("beta", ["file:///echo?of=beta", "file:///echo?of=both"], ["file:///hops/{count}"])
    )
    services = "".join(
        f"""
  {name}:
    openapi: {ECHO_SPEC}
    name: {name}
    tool_prefix: {name}_
    backend: {recorder.url}
    credentials: {{type: api_key, name: X-Api-Key, value: {{env: {name.upper()}_KEY}}}}
    artifacts: [{name}.yaml]"""
        for name, recorder in (("alpha", alpha), ("beta", beta))
    )
    config = f"services:{services}\nexpositions:\n  both:\n    services: [alpha, beta]\n"
    async with gateway_of(config, tmp_path) as app:
        (route,) = app.runtime.routes.by_id.values()
        handler = route.endpoint.handler
        for uri in ("file:///echo?of=beta", "file:///hops/0"):
            await handler.read_resource(NO_REQUEST, uri)
        assert [(r["target"], r["headers"]["X-Api-Key"]) for r in beta.seen] == [
            ("/v1/echo?of=beta", "beta-key-for-beta-only"),
            ("/v1/hops/0", "beta-key-for-beta-only"),
        ]
        assert alpha.seen == []  # before the fix: both reads, with alpha's key
        for uri in ("file:///echo?of=alpha", "file:///echo?of=both"):
            await handler.read_resource(NO_REQUEST, uri)
    assert [(r["target"], r["headers"]["X-Api-Key"]) for r in alpha.seen] == [
        ("/v1/echo?of=alpha", "alpha-key-for-alpha-only"),
        ("/v1/echo?of=both", "alpha-key-for-alpha-only"),
    ]
    assert len(beta.seen) == 2
