"""Calling GraphQL operations against a real GraphQL server (graphql-core over aiohttp)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import jsonschema
import pytest
import yarl

from apimcp.backends import lane
from apimcp.backends.base import Failure, JsonBody
from apimcp.backends.credentials import ApiKey, Bearer
from apimcp.backends.graphql import GraphQLBackend
from apimcp.backends.lane import fast_lane
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import GraphQLBinding, Operation, RestBinding, Service
from apimcp.importers.graphql import import_graphql
from tests.gateway.hostile_backend import hostile_backend
from tests.support.fetching import loopback_fetcher
from tests.support.graphql_server import graphql_server
from tests.support.processes import free_port

pytestmark = pytest.mark.anyio

INJECTIONS = [
    '") { __schema { types { name } } } #',
    '"} mutation { deleteBook(id: "b1") } #',
    "$text",
    'back\\slash \\" and \\u0000 escapes',
    'quotes " and \' and """ block """',
    "new\nlines\r\n and\ttabs",
    "unicode ☃ 𝄞 \u2028",
    "{ books { title } }",
]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with graphql_server() as url:
        yield url


@pytest.fixture(scope="module")
def service(endpoint: str) -> Service:
    return import_graphql(endpoint, name="library", version="1", introspect=True, fetcher=loopback_fetcher())


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    client = new_session()
    yield client
    await close_session(client)


@pytest.fixture
def backend(service: Service, session: aiohttp.ClientSession) -> GraphQLBackend:
    return GraphQLBackend(service, session)  # the endpoint comes from the introspected service


def op(service: Service, tool: str) -> Operation:
    operation = service.operation(tool)
    assert operation is not None
    return operation


async def ok(backend: GraphQLBackend, service: Service, tool: str, arguments: dict[str, Any]) -> JsonBody:
    """A successful call, whose value is checked against the tool's input and output schemas."""
    operation = op(service, tool)
    jsonschema.validate(arguments, operation.input_schema, cls=jsonschema.Draft202012Validator)
    result = await backend.call(operation, arguments)
    assert isinstance(result, JsonBody), result
    assert operation.output_schema is not None
    jsonschema.validate(result.value, operation.output_schema, cls=jsonschema.Draft202012Validator)
    return result


async def test_a_query_with_variables(backend: GraphQLBackend, service: Service) -> None:
    result = await ok(backend, service, "book", {"id": "b1"})
    book = result.value["book"]
    assert book["title"] == "The Dispossessed"
    assert book["author"] == {"id": "a1", "name": "Ursula K. Le Guin", "born": "1929-10-21"}
    assert result.notes == ()
    assert result.text.startswith('{"book":{"id":"b1",')
    assert (await ok(backend, service, "book", {"id": "nope"})).value == {"book": None}


async def test_nested_and_recursive_input_objects(backend: GraphQLBackend, service: Service) -> None:
    nested = {"and": [{"genre": "FICTION"}, {"or": [{"titleContains": "LEFT"}, {"publishedAfter": "1974-01-01"}]}]}
    result = await ok(backend, service, "books", {"filter": nested})
    assert sorted(b["title"] for b in result.value["books"]) == ["The Dispossessed", "The Left Hand of Darkness"]
    everything = await ok(backend, service, "books", {})  # limit left out: its default (10) applies
    assert len(everything.value["books"]) == 3
    assert len((await ok(backend, service, "books", {"limit": 1, "filter": None})).value["books"]) == 1


async def test_unions_and_interfaces_come_back_as_their_output_schema_says(
    backend: GraphQLBackend, service: Service
) -> None:
    found = (await ok(backend, service, "search", {"text": "o"})).value["search"]
    assert {item["__typename"] for item in found} == {"Book"}
    found = (await ok(backend, service, "search", {"text": "sagan"})).value["search"]
    assert found[0]["__typename"] == "Author" and found[0]["books"][0]["title"] == "Cosmos"
    node = (await ok(backend, service, "node", {"id": "a2"})).value["node"]
    assert node["__typename"] == "Author" and node["born"] is None


async def test_a_mutation_with_an_input_object(backend: GraphQLBackend, service: Service) -> None:
    arguments = {"input": {"title": 'Rock "n" Roll', "authorId": "a2", "tags": ["x"]}}
    added = (await ok(backend, service, "addBook", arguments)).value["addBook"]
    assert added["title"] == 'Rock "n" Roll' and added["genre"] == "FICTION"  # the input's default
    assert (await ok(backend, service, "deleteBook", {"id": added["id"]})).value == {"deleteBook": True}


@pytest.mark.parametrize("text", INJECTIONS)
async def test_injection_attempts_stay_data(backend: GraphQLBackend, service: Service, text: str) -> None:
    assert (await ok(backend, service, "echo", {"text": text})).value == {"echo": text}
    many = await ok(backend, service, "echoMany", {"texts": [text, text], "times": 2})
    assert many.value == {"echoMany": [text] * 4}
    assert len((await ok(backend, service, "books", {})).value["books"]) == 3  # nothing was deleted


async def test_errors_without_data_are_failures(backend: GraphQLBackend, service: Service) -> None:
    result = await backend.call(op(service, "failing"), {})
    assert result == Failure("GraphQL errors: the failing field failed, as it always does (at path failing)")


async def test_partial_data_comes_with_the_errors_as_notes(backend: GraphQLBackend, service: Service) -> None:
    result = await ok(backend, service, "booksByIds", {"ids": ["b1", "zz", "b2"]})
    assert [b and b["id"] for b in result.value["booksByIds"]] == ["b1", None, "b2"]
    assert result.notes == ("GraphQL errors: no book 'zz' (at path booksByIds.1)",)


async def test_requests_the_server_refuses_with_graphql_errors(backend: GraphQLBackend, service: Service) -> None:
    result = await backend.call(op(service, "book"), {})  # a required variable left out
    assert isinstance(result, Failure) and result.status == 400
    assert result.message.startswith("GraphQL errors: Variable '$id' has invalid value")
    broken = dataclasses.replace(
        op(service, "echo"),
        binding=GraphQLBinding("query", "echo", "query Echo { echo { nope } }", "Echo", {}),
    )
    result = await backend.call(broken, {})
    assert isinstance(result, Failure) and result.status == 400
    assert result.message.startswith("GraphQL errors: Field 'echo' must not have a selection")


async def test_http_error_statuses(service: Service, session: aiohttp.ClientSession, endpoint: str) -> None:
    base = endpoint.removesuffix("/graphql")
    result = await GraphQLBackend(service, session, endpoint=f"{base}/status/502").call(
        op(service, "echo"), {"text": "a"}
    )
    assert result == Failure("HTTP 502 Bad Gateway: status 502 from the test server", 502, transient=True)
    result = await GraphQLBackend(service, session, endpoint=f"{base}/status/200").call(
        op(service, "echo"), {"text": "a"}
    )
    assert result == Failure("The backend's answer is not a GraphQL response: status 200 from the test server", 200)


async def test_timeout(service: Service, session: aiohttp.ClientSession) -> None:
    backend = GraphQLBackend(service, session, timeout_seconds=0.2)
    result = await backend.call(op(service, "slow"), {"seconds": 1.0})
    assert isinstance(result, Failure)
    assert result.message.startswith("The backend did not answer within 0.2 s (127.0.0.1:")


async def test_refused_connection_and_unknown_host(service: Service, session: aiohttp.ClientSession) -> None:
    port = free_port()
    backend = GraphQLBackend(
        service, session, endpoint=f"http://127.0.0.1:{port}/graphql", credentials=ApiKey("k", "s3cret", "query")
    )
    result = await backend.call(op(service, "echo"), {"text": "a"})
    refused = f"Could not connect to the backend at 127.0.0.1:{port}: connection refused"
    assert result == Failure(refused, transient=True, unsent=True)  # the same call may go elsewhere, or later
    result = await GraphQLBackend(service, session, endpoint="http://no-such-host.invalid/graphql").call(
        op(service, "echo"), {"text": "a"}
    )
    assert isinstance(result, Failure) and "no-such-host.invalid" in result.message
    assert "s3cret" not in result.message


async def test_size_limit(service: Service, session: aiohttp.ClientSession) -> None:
    backend = GraphQLBackend(service, session, max_response_bytes=1000)
    assert isinstance(await backend.call(op(service, "big"), {"size": 900}), JsonBody)
    result = await backend.call(op(service, "big"), {"size": 5000})
    assert result == Failure("The backend's response is larger than the 1000 bytes allowed")


@pytest.mark.parametrize(
    ("credentials", "headers", "expected"),
    [
        (Bearer("t0ken"), None, {"authorization": "Bearer t0ken", "apiKeyHeader": None, "apiKeyQuery": None}),
        (ApiKey("X-Api-Key", "k1"), None, {"authorization": None, "apiKeyHeader": "k1", "apiKeyQuery": None}),
        (ApiKey("api_key", "k&2", "query"), None, {"authorization": None, "apiKeyHeader": None, "apiKeyQuery": "k&2"}),
        (None, {"X-Api-Key": "static"}, {"authorization": None, "apiKeyHeader": "static", "apiKeyQuery": None}),
    ],
)
async def test_credentials_reach_the_server(
    service: Service,
    session: aiohttp.ClientSession,
    credentials: Bearer | ApiKey | None,
    headers: dict[str, str] | None,
    expected: dict[str, Any],
) -> None:
    backend = GraphQLBackend(service, session, credentials=credentials, headers=headers)
    assert (await ok(backend, service, "requestInfo", {})).value == {"requestInfo": expected}


async def test_only_given_arguments_are_sent_and_other_bindings_are_refused(
    backend: GraphQLBackend, service: Service
) -> None:
    result = await ok(backend, service, "echoMany", {"texts": ["a"]})  # times left out: the field sees no value
    assert result.value == {"echoMany": ["a"]}
    rest = dataclasses.replace(op(service, "echo"), binding=RestBinding(method="GET", path="/echo"))
    assert await backend.call(rest, {"text": "a"}) == Failure("echo is not a GraphQL operation", local=True)


def test_an_endpoint_is_needed() -> None:
    service = Service(name="lonely", version="1", operations=(), kind="graphql")
    with pytest.raises(ValueError, match="a GraphQL endpoint URL is needed"):
        GraphQLBackend(service, None)  # type: ignore[arg-type]


async def test_a_graphql_endpoint_redirecting_to_another_origin_is_not_followed(
    service: Service, session: aiohttp.ClientSession
) -> None:
    with hostile_backend() as elsewhere, hostile_backend() as hostile:
        other = elsewhere.url.removesuffix("/v1")
        endpoint = f"{hostile.url}/away?to={other}/graphql&status=307"
        backend = GraphQLBackend(service, session, endpoint=endpoint, credentials=ApiKey("X-Api-Key", "key-0123456"))
        result = await backend.call(op(service, "echo"), {"text": "hi"})
        assert isinstance(result, Failure) and result.status == 307
        assert f"a redirect to another origin ({other}), which is not followed" in result.message
        assert elsewhere.seen == [] and len(hostile.seen) == 1


async def test_credentials_a_graphql_server_echoes_are_masked(service: Service, session: aiohttp.ClientSession) -> None:
    credentials = [
        Bearer("graphql-bearer-token"),
        ApiKey("X-Api-Key", "header-key-value"),
        ApiKey("api_key", "q&key-value", "query"),
    ]
    backend = GraphQLBackend(service, session, credentials=credentials)
    result = await ok(backend, service, "requestInfo", {})
    assert result.value == {"requestInfo": {"authorization": "Bearer ***", "apiKeyHeader": "***", "apiKeyQuery": "***"}}
    assert "key-value" not in result.text and "graphql-bearer-token" not in result.text


async def test_plain_http_calls_take_the_lean_client_unless_the_session_is_traced(
    service: Service, session: aiohttp.ClientSession, endpoint: str
) -> None:
    lean = fast_lane(session)
    assert lean is not None
    sent: list[str] = []
    request = lean.request

    async def counted(method: str, url: yarl.URL, *args: Any, **kwargs: Any) -> Any:
        sent.append(f"{method} {url.path}")
        return await request(method, url, *args, **kwargs)

    lean.request = counted  # type: ignore[method-assign]
    assert (await ok(GraphQLBackend(service, session), service, "book", {"id": "b1"})).value["book"]["id"] == "b1"
    assert len(sent) == 1 and sent[0].startswith("POST ")
    plain = yarl.URL(endpoint)
    assert lane.lane_for(session, plain) is lean
    assert lane.lane_for(session, plain.with_scheme("https")) is None  # TLS stays with aiohttp
    traced = aiohttp.ClientSession(trace_configs=[aiohttp.TraceConfig()])
    lane.attach(traced, lean)
    try:
        assert lane.lane_for(traced, plain) is None  # its trace configs must see every call
    finally:
        lane.detach(traced)
        await traced.close()
