"""gRPC calls against a real grpc.aio server: unary, streaming, errors, deadlines, TLS and credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import grpc
import grpc.aio
import pytest
from aiohttp import web

from apimcp.backends.base import BackendResult, CallExtras, Failure, JsonBody
from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials
from apimcp.backends.grpc import GrpcBackend, GrpcChannels, GrpcTls
from apimcp.backends.grpc_channels import parse_target
from apimcp.backends.oauth_client import ClientCredentials
from apimcp.catalog.model import Service
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.masking import base64_forms
from tests.support.fetching import loopback_fetcher
from tests.support.grpc_certs import Pki, make_pki
from tests.support.grpc_server import PROTOS, SHOP_PROTO, RunningServer, ServerTls, answering, running_server
from tests.support.live_aiohttp import live_aiohttp
from tests.support.processes import free_port

pytestmark = pytest.mark.anyio

SHOP = import_protobuf(str(PROTOS / SHOP_PROTO), include_paths=[str(PROTOS)])
TOKEN = "s3cret-bearer-token-value"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running_server() as running:
        yield running


@pytest.fixture(scope="module")
def pki() -> Pki:
    return make_pki()


@pytest.fixture(scope="module")
def tls_server(pki: Pki) -> Iterator[RunningServer]:
    with running_server(ServerTls(pki.server.cert_pem, pki.server.key_pem)) as running:
        yield running


@pytest.fixture(scope="module")
def mtls_server(pki: Pki) -> Iterator[RunningServer]:
    with running_server(ServerTls(pki.server.cert_pem, pki.server.key_pem, client_ca_pem=pki.ca.cert_pem)) as running:
        yield running


@pytest.fixture
async def channels() -> AsyncIterator[GrpcChannels]:
    shared = GrpcChannels()
    yield shared
    await shared.close()


async def call(backend: GrpcBackend, tool: str, arguments: dict[str, Any], **kwargs: Any) -> BackendResult:
    operation = SHOP.operation(tool)
    assert operation is not None
    return await backend.call(operation, arguments, **kwargs)


def backend(channels: GrpcChannels, server: RunningServer, **kwargs: Any) -> GrpcBackend:
    return GrpcBackend(SHOP, channels, target=server.address, **kwargs)


def ok(result: BackendResult) -> Any:
    assert isinstance(result, JsonBody), result
    return result.value


def failed(result: BackendResult) -> str:
    assert isinstance(result, Failure), result
    return result.message


# --- unary --------------------------------------------------------------------------------------------------------


async def test_unary_answers_follow_the_json_mapping(channels: GrpcChannels, server: RunningServer) -> None:
    result = await call(backend(channels, server), "GetItem", {"id": "7"})
    value = ok(result)
    assert value["price"] == {"currencyCode": "EUR", "units": "12345678901234567", "nanos": 500000000}  # int64: string
    assert value["category"] == "BOOKS"  # enums by name
    assert value["tags"] == ["new", "sale"]
    assert value["stock"] == {} and value["views"] == "0" and value["available"] is False  # zeros are printed
    assert "sku" not in value and "createdAt" not in value  # fields with presence only when set
    assert isinstance(result, JsonBody) and result.text.startswith('{"id":"7","title":"Item 7"')


async def test_nested_oneof_map_and_well_known_values_round_trip(channels: GrpcChannels, server: RunningServer) -> None:
    item = {
        "id": "42",
        "title": "Dune",
        "price": {"currencyCode": "EUR", "units": "9223372036854775807", "nanos": 990000000},
        "category": "GAMES",
        "stock": {"paris": 3, "lyon": 0},
        "amountOff": {"currencyCode": "EUR", "units": 2},
        "createdAt": "2024-05-01T12:00:00Z",
        "shelfLife": "3600.500s",
        "attributes": {"colour": "red", "pages": 412, "tags": ["a"], "none": None},
        "updateMask": "title,price.units",
        "note": "",
        "sku": "SKU-1",
        "thumbnail": "aGVsbG8=",
        "tree": {"label": "root", "children": [{"label": "leaf"}]},
        "views": 12,
        "delta": "-5",
        "extra": [1, "two", None],
        "history": [True, {"k": "v"}],
        "payload": {"@type": "type.googleapis.com/shop.v1.Money", "currencyCode": "USD", "units": "1"},
        "priceByDay": {"-3": {"units": 1}},
        "alsoIn": ["BOOKS", "GAMES"],
        "big": "7",
        "rating": "NaN",
    }
    value = ok(await call(backend(channels, server), "PutItem", item))
    assert value["price"] == item["price"]
    assert value["amountOff"] == {"currencyCode": "EUR", "units": "2", "nanos": 0}
    assert "percentOff" not in value
    assert value["stock"] == {"paris": 3, "lyon": 0}
    assert value["createdAt"] == "2024-05-01T12:00:00Z"
    assert value["shelfLife"] == "3600.500s"
    assert value["attributes"] == {"colour": "red", "pages": 412.0, "tags": ["a"], "none": None}
    assert value["updateMask"] == "title,price.units"
    assert value["note"] == "" and value["sku"] == "SKU-1"
    assert value["thumbnail"] == "aGVsbG8="
    assert value["tree"] == {"label": "root", "children": [{"label": "leaf", "children": []}]}
    assert (value["views"], value["delta"], value["big"]) == ("12", "-5", "7")
    assert value["extra"] == [1.0, "two", None]
    assert value["history"] == [True, {"k": "v"}]
    assert value["payload"] == {
        "@type": "type.googleapis.com/shop.v1.Money",
        "currencyCode": "USD",
        "units": "1",
        "nanos": 0,
    }
    assert value["priceByDay"] == {"-3": {"currencyCode": "", "units": "1", "nanos": 0}}
    assert value["alsoIn"] == ["BOOKS", "GAMES"]
    assert value["rating"] == "NaN"


async def test_client_streaming_sends_the_list_and_bidi_collects_the_answers(
    channels: GrpcChannels, server: RunningServer
) -> None:
    shop = backend(channels, server)
    total = ok(await call(shop, "SumLines", {"messages": [{"sku": "a", "quantity": "2"}, {"quantity": 40}]}))
    assert total == {"quantity": "42", "lines": 2}
    assert ok(await call(shop, "SumLines", {"messages": []})) == {"quantity": "0", "lines": 0}
    chat = await call(shop, "Chat", {"messages": [{"text": "hi"}, {"text": "there"}]})
    assert ok(chat) == {"messages": [{"text": "echo: hi"}, {"text": "echo: there"}]}


# --- server streaming ---------------------------------------------------------------------------------------------


async def test_server_streaming_collects_messages_and_reports_progress(
    channels: GrpcChannels, server: RunningServer
) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    result = await call(backend(channels, server), "ListItems", {"count": 3, "delayMs": 5}, progress=progress)
    assert [m["id"] for m in ok(result)["messages"]] == ["0", "1", "2"]
    assert isinstance(result, JsonBody) and result.notes == ()
    assert reports == [(1.0, None, "1 messages"), (2.0, None, "2 messages"), (3.0, None, "3 messages")]
    silent = await call(backend(channels, server), "ListItems", {"count": 2})
    assert len(ok(silent)["messages"]) == 2


async def test_a_stream_stops_at_the_message_limit_and_says_so(channels: GrpcChannels, server: RunningServer) -> None:
    result = await call(backend(channels, server, max_stream_messages=3), "ListItems", {"count": 1000, "delayMs": 1})
    assert [m["id"] for m in ok(result)["messages"]] == ["0", "1", "2"]
    assert isinstance(result, JsonBody)
    assert len(result.notes) == 1 and "stopped after 3 messages, the limit" in result.notes[0]


async def test_a_stream_stops_at_the_size_limit(channels: GrpcChannels, server: RunningServer) -> None:
    result = await call(backend(channels, server, max_response_bytes=30), "ListItems", {"count": 10})
    assert isinstance(result, JsonBody)
    assert 0 < len(result.value["messages"]) < 10
    assert "30 bytes" in result.notes[0]
    too_big = await call(backend(channels, server, max_response_bytes=10), "GetItem", {"id": "7"})
    assert failed(too_big) == "The backend's response is larger than the 10 bytes allowed"


async def test_a_server_streaming_call_that_hits_its_deadline_after_several_messages_returns_them(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """Finding: the messages received before the deadline were dropped for "the backend did not answer"."""
    # a message every 20 ms: the second comes 0.56 s before the deadline, the hundredth would come 1.4 s after it
    result = await call(backend(channels, server, timeout_seconds=0.6), "ListItems", {"count": 100, "delayMs": 20})
    assert isinstance(result, JsonBody), result
    received = [m["id"] for m in result.value["messages"]]
    assert 2 <= len(received) < 100
    assert received == [str(i) for i in range(len(received))]
    assert result.notes == (
        f"The stream was cut by its deadline (0.6 s) after {len(received)} messages: more may have followed.",
    )
    assert '"id":"1"' in result.text
    silent = await call(backend(channels, server, timeout_seconds=0.2), "Sleep", {"millis": 3000})
    assert "did not answer within 0.2 s" in failed(silent)  # nothing arrived: still a failure


# --- failures -----------------------------------------------------------------------------------------------------


async def test_an_error_status_names_code_message_and_rich_details(
    channels: GrpcChannels, server: RunningServer
) -> None:
    message = failed(await call(backend(channels, server), "Fail", {"reason": "because"}))
    assert message.startswith("gRPC INVALID_ARGUMENT: the request is refused — details: [")
    assert (
        '{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":'
        '[{"field":"reason","description":"\'because\' is not acceptable"}]}' in message
    )
    assert '"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"NOT_ACCEPTABLE"' in message
    assert '{"@type":"type.example.com/shop.v1.Secret"}' in message  # unknown types: named by their URL
    plain = failed(await call(backend(channels, server), "GetItem", {"id": "missing"}))
    assert plain == "gRPC NOT_FOUND: no item 'missing'"


async def test_invalid_arguments_are_refused_before_calling(channels: GrpcChannels, server: RunningServer) -> None:
    shop = backend(channels, server)
    assert failed(await call(shop, "GetItem", {"ident": "1"})).startswith(
        'Invalid arguments: Message type "shop.v1.GetItemRequest" has no field named "ident"'
    )
    assert failed(await call(shop, "PutItem", {"category": "FOOD"})).startswith("Invalid arguments: ")
    assert failed(await call(shop, "SumLines", {"messages": {"quantity": 1}})) == (
        "Invalid arguments: 'messages' must be a list of request messages"
    )
    assert failed(await call(shop, "SumLines", {"messages": [{}, 3]})) == (
        "Invalid arguments: messages[1]: a request message must be a JSON object"
    )


async def test_a_slow_answer_hits_the_deadline(channels: GrpcChannels, server: RunningServer) -> None:
    message = failed(await call(backend(channels, server, timeout_seconds=0.2), "Sleep", {"millis": 3000}))
    assert message == f"gRPC DEADLINE_EXCEEDED: the backend did not answer within 0.2 s ({server.address})"
    assert ok(await call(backend(channels, server, timeout_seconds=5), "Sleep", {"millis": 10})) == {}


async def test_nothing_listening_is_named(channels: GrpcChannels) -> None:
    target = f"127.0.0.1:{free_port()}"
    result = await GrpcBackend(SHOP, channels, target=target, timeout_seconds=5).call(SHOP.operations[0], {"id": "1"})
    assert failed(result) == f"gRPC UNAVAILABLE: could not connect to the backend at {target}: connection refused"
    assert isinstance(result, Failure) and result.unsent  # another address may take it, idempotent or not


async def test_a_server_that_says_connection_refused_itself_has_had_the_call(channels: GrpcChannels) -> None:
    """The finding: a method that ran, then answered UNAVAILABLE "... Connection refused" about its own database,
    was taken as never sent, and failover made the call (not idempotent) again on the next address."""

    async def add_lines(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "inventory database: Connection refused")
        raise AssertionError("abort raises")

    def same(data: bytes) -> bytes:
        return data

    adding = next(op for op in SHOP.operations if op.signature.endswith("/AddLines"))
    async with answering(grpc.unary_unary_rpc_method_handler(add_lines, same, same)) as address:
        result = await GrpcBackend(SHOP, channels, target=address, timeout_seconds=5).call(adding, {"quantity": 1})
    assert isinstance(result, Failure) and result.transient and not result.unsent


# --- TLS ----------------------------------------------------------------------------------------------------------


async def test_tls_with_a_configured_ca(channels: GrpcChannels, tls_server: RunningServer, pki: Pki) -> None:
    trusted = GrpcBackend(SHOP, channels, target=f"grpcs://{tls_server.address}", tls=GrpcTls(ca_pem=pki.ca.cert_pem))
    assert ok(await call(trusted, "GetItem", {"id": "1"}))["id"] == "1"
    # a configured TLS makes a plain host:port target TLS too
    implied = GrpcBackend(SHOP, channels, target=f"localhost:{tls_server.port}", tls=GrpcTls(ca_pem=pki.ca.cert_pem))
    assert ok(await call(implied, "GetItem", {"id": "2"}))["id"] == "2"
    stranger = GrpcTls(ca_pem=pki.other_ca.cert_pem)
    untrusted = GrpcBackend(SHOP, channels, target=tls_server.address, tls=stranger, timeout_seconds=5)
    assert failed(await call(untrusted, "GetItem", {"id": "1"})).startswith("gRPC UNAVAILABLE")
    plaintext = GrpcBackend(SHOP, channels, target=tls_server.address, timeout_seconds=5)
    assert failed(await call(plaintext, "GetItem", {"id": "1"})).startswith("gRPC UNAVAILABLE")


async def test_mutual_tls_needs_the_client_certificate(
    channels: GrpcChannels, mtls_server: RunningServer, pki: Pki
) -> None:
    target = f"grpcs://{mtls_server.address}"
    with_cert = GrpcTls(pki.ca.cert_pem, pki.client.cert_pem, pki.client.key_pem)
    assert (
        ok(await call(GrpcBackend(SHOP, channels, target=target, tls=with_cert), "GetItem", {"id": "1"}))["id"] == "1"
    )
    without = GrpcBackend(SHOP, channels, target=target, tls=GrpcTls(ca_pem=pki.ca.cert_pem), timeout_seconds=5)
    assert failed(await call(without, "GetItem", {"id": "1"})).startswith("gRPC UNAVAILABLE")
    assert "client_key_pem" not in repr(with_cert) or "BEGIN" not in repr(with_cert)
    with pytest.raises(ValueError, match="needs both the certificate and its private key"):
        GrpcTls(client_cert_pem=pki.client.cert_pem)


# --- credentials --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("credentials", "key", "echoed"),
    [
        (Bearer(TOKEN), "authorization", "Bearer ***"),
        (Basic("ana", "pa55"), "authorization", "Basic ***"),  # the base64 is masked; a 4-letter password is not
        (ApiKey("X-Api-Key", "k-123456"), "x-api-key", "***"),
        (ApiKey("X-Api-Key", "k-12"), "x-api-key", "k-12"),  # under the 6 characters a mask searches for
    ],
)
async def test_credentials_travel_as_metadata_and_their_echo_is_masked(
    channels: GrpcChannels, server: RunningServer, credentials: Credentials, key: str, echoed: str
) -> None:
    caller = ok(await call(backend(channels, server, credentials=credentials), "WhoAmI", {}))
    assert caller["metadata"][key] == echoed


async def test_a_backend_that_echoes_request_headers_no_longer_hands_the_credentials_to_the_mcp_client(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """Finding: the echo of every credential of a call is masked, in the value and in its text."""
    credentials = [ApiKey("x-api-key", "key-value-1234"), ApiKey("x-client-id", "client-id-5678"), Bearer(TOKEN)]
    result = await call(backend(channels, server, credentials=credentials), "WhoAmI", {})
    assert isinstance(result, JsonBody)
    metadata = result.value["metadata"]
    assert (metadata["x-api-key"], metadata["x-client-id"], metadata["authorization"]) == ("***", "***", "Bearer ***")
    for secret in ("key-value-1234", "client-id-5678", TOKEN):
        assert secret not in result.text


async def test_metadata_values_grpc_cannot_carry_are_a_tool_error(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """Finding (the same class as CR/LF in a header): a credential with a line break or a non-ASCII letter made
    grpc raise an ExecuteBatchError out of the call; it is now a tool error naming the metadata, not the value."""
    for value in ("line\nbreak-value", "caf\u00e9-value-123", "tab\tvalue-123"):
        message = failed(await call(backend(channels, server, credentials=ApiKey("x-api-key", value)), "WhoAmI", {}))
        assert message.startswith("The backend credentials cannot be sent: the value of the x-api-key metadata")
        assert value not in message


async def test_credentials_never_appear_in_failures(channels: GrpcChannels, server: RunningServer) -> None:
    message = failed(await call(backend(channels, server, credentials=Bearer(TOKEN)), "Fail", {"reason": TOKEN}))
    assert TOKEN not in message
    assert "'***' is not acceptable" in message


async def test_oauth_client_credentials_fetch_a_token_for_the_metadata(
    channels: GrpcChannels, server: RunningServer
) -> None:
    async def token(request: web.Request) -> web.Response:
        return web.json_response({"access_token": "minted-token-1", "expires_in": 3600})

    def app() -> web.Application:
        application = web.Application()
        application.router.add_post("/token", token)
        return application

    with live_aiohttp(app) as url:
        async with aiohttp.ClientSession() as session:
            client = ClientCredentials(f"{url}/token", "gateway", "client-secret")
            shop = backend(channels, server, credentials=client, oauth_session=session)
            caller = ok(await call(shop, "WhoAmI", {}))
    assert caller["metadata"]["authorization"] == "Bearer ***"  # the access token reached it, and is masked


def test_what_grpc_cannot_carry_is_refused_when_the_backend_is_made() -> None:
    channels = GrpcChannels()
    with pytest.raises(ValueError, match="an API key in the query cannot be sent"):
        GrpcBackend(SHOP, channels, target="h:1", credentials=ApiKey("key", "v", "query"))
    with pytest.raises(ValueError, match="cannot be a gRPC metadata key"):
        GrpcBackend(SHOP, channels, target="h:1", credentials=ApiKey("X Key", "v"))
    with pytest.raises(ValueError, match="need an HTTP session"):
        GrpcBackend(SHOP, channels, target="h:1", credentials=ClientCredentials("https://a/t", "id", "secret"))
    with pytest.raises(ValueError, match="declares no server: a gRPC target"):
        GrpcBackend(SHOP, channels)
    with pytest.raises(ValueError, match="no protobuf descriptors"):
        GrpcBackend(Service("s", "1", (), kind="grpc"), channels, target="h:1")
    with pytest.raises(ValueError, match="not 'http://h:1'"):
        GrpcBackend(SHOP, channels, target="http://h:1")


def test_targets() -> None:
    assert (parse_target("h:1").address, parse_target("h:1").secure) == ("h:1", False)
    assert (parse_target("grpc://h:1").address, parse_target("grpc://h:1").secure) == ("h:1", False)
    assert (parse_target("grpcs://h:1").address, parse_target("grpcs://h:1").secure) == ("h:1", True)
    assert parse_target("grpc://h:1", GrpcTls()).secure
    assert parse_target("dns:///h:1").address == "dns:///h:1"


# --- channels -----------------------------------------------------------------------------------------------------


async def test_a_reflected_service_is_called_at_its_own_server(channels: GrpcChannels, server: RunningServer) -> None:
    reflected = import_protobuf(f"grpc://{server.address}", fetcher=loopback_fetcher())
    operation = reflected.operation("GetItem")
    assert operation is not None
    assert ok(await GrpcBackend(reflected, channels).call(operation, {"id": "9"}))["title"] == "Item 9"


async def test_channels_are_shared_per_target_and_closed_together(server: RunningServer) -> None:
    channels = GrpcChannels()
    first, second = backend(channels, server), backend(channels, server, credentials=Bearer(TOKEN))
    assert ok(await call(first, "GetItem", {"id": "1"}))["id"] == "1"
    assert ok(await call(second, "GetItem", {"id": "2"}))["id"] == "2"
    assert len(channels) == 1
    target = parse_target(server.address)
    channel = channels.get(target)
    assert channels.get(target) is channel
    assert channels.get(parse_target(f"grpc://{server.address}")) is channel
    await channels.close()
    assert len(channels) == 0
    with pytest.raises(Exception, match="closed"):
        await channel.unary_unary("/shop.v1.ShopService/OldPing")(b"")
    # a backend keeps working after a close: it asks for a fresh channel
    assert ok(await call(first, "OldPing", {})) == {}
    assert channels.get(target) is not channel
    await channels.close()


async def test_channels_no_backend_uses_are_closed_after_a_grace(server: RunningServer) -> None:
    channels = GrpcChannels()
    first, second = parse_target(server.address), parse_target(f"localhost:{server.port}")
    kept = channels.get(first)
    retired = channels.get(second)
    channels.retain({GrpcChannels.key(first, None)}, grace_seconds=0.01)
    assert len(channels) == 1
    assert channels.get(first) is kept
    assert channels.get(second) is not retired  # a new one when asked again
    await channels.close()  # also waits for the retired one's closing
    assert len(channels) == 0
    assert retired.get_state() == grpc.ChannelConnectivity.SHUTDOWN
    assert kept.get_state() == grpc.ChannelConnectivity.SHUTDOWN


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


@pytest.mark.parametrize(("enums", "allowed"), [(300_000, False), (1_000, True)])
async def test_an_answer_whose_json_outgrows_its_bound_many_times_is_refused(enums: int, allowed: bool) -> None:
    """The finding: packed enums (a byte each on the wire, a name each as JSON) made a 4 MB answer, within its bound,
    into 92 MB of text on the event loop (held 2.8 s). Now the JSON is written in a thread past 64 KiB, and an answer
    whose JSON is more than 8 times `max_response_bytes` is refused."""
    answer = b"\x0a\x011" + _varint((25 << 3) | 2) + _varint(enums) + b"\x00" * enums  # id "1", also_in packed

    async def unary(request: bytes, context: Any) -> bytes:
        return answer

    channels = GrpcChannels()
    async with answering(grpc.unary_unary_rpc_method_handler(unary)) as target:
        try:
            backend = GrpcBackend(SHOP, channels, target=target, max_response_bytes=400_000)
            result = await backend.call(SHOP.operation("GetItem"), {"id": "1"})
        finally:
            await channels.close()
    if allowed:
        assert isinstance(result, JsonBody) and len(result.value["alsoIn"]) == enums
    else:
        assert isinstance(result, Failure)
        assert result.message == "The backend's answer, written as JSON, is larger than the 3200000 bytes allowed"


async def test_odd_anys_in_arguments_and_answers_are_tool_errors_not_internal_ones(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """The findings: a nested Any whose "@type" is not a string raised AttributeError out of protobuf, and an answer's
    Any whose packed bytes are not its type's raised DecodeError: both were -32603."""
    nested = {"id": "1", "payload": {"@type": "type.googleapis.com/shop.v1.Item", "payload": {"@type": 5}}}
    assert failed(await call(backend(channels, server), "PutItem", nested)).startswith("Invalid arguments: ")
    url = b"type.googleapis.com/shop.v1.Item"
    packed = b"\x0a" + _varint(len(url)) + url + b"\x12\x02\x0a\x05"  # an Item whose id says 5 bytes and has none
    answer = b"\x0a\x011" + _varint((23 << 3) | 2) + _varint(len(packed)) + packed

    async def unary(request: bytes, context: Any) -> bytes:
        return answer

    async with answering(grpc.unary_unary_rpc_method_handler(unary)) as target:
        result = await GrpcBackend(SHOP, channels, target=target).call(SHOP.operation("GetItem"), {"id": "1"})
    assert failed(result).startswith("the backend's answer cannot be shown as JSON")


async def test_unauthenticated_is_a_401_and_client_headers_grpc_cannot_name_are_left_out(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """The findings: a user's credential refused with UNAUTHENTICATED was never asked for again (renewal follows a
    401), and a passed-on header named `x-a!b` (HTTP allows it, gRPC not) failed the call with -32603."""

    async def refuse(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "token expired")
        raise AssertionError("abort raises")

    async with answering(grpc.unary_unary_rpc_method_handler(refuse)) as target:
        result = await GrpcBackend(SHOP, channels, target=target).call(SHOP.operation("GetItem"), {"id": "1"})
    assert isinstance(result, Failure) and result.status == 401
    extras = CallExtras(headers={"x-a!b": "1", "x-a~b": "2", "x-fine": "3"})
    caller = ok(await call(backend(channels, server), "WhoAmI", {}, extras=extras))
    assert caller["metadata"]["x-fine"] == "3" and not {"x-a!b", "x-a~b"} & caller["metadata"].keys()


async def test_a_bytes_argument_that_is_not_base64_is_refused_not_sent_mangled(
    channels: GrpcChannels, server: RunningServer
) -> None:
    """The finding: protobuf's reader drops what base64 does not know, so "hello world!" was sent as other bytes
    (`helloworlQ==`), "!!!" as none, and the call said it succeeded."""
    shop = backend(channels, server)
    for odd in ("hello world!", "!!!", "data:image/png;base64,iVBORw0KGgo=", "abcde"):
        refused = failed(await call(shop, "PutItem", {"id": "1", "thumbnail": odd}))
        assert refused == "Invalid arguments: thumbnail: a bytes field takes base64 (standard or URL-safe)"
    for fine in ("aGVsbG8gd29ybGQh", "aGk=", "aGk", "-_-_", ""):
        assert ok(await call(shop, "PutItem", {"id": "1", "thumbnail": fine}))["id"] == "1"


@pytest.mark.parametrize("lead", [b"", b"x", b"xy"])  # the three places a value may start in base64's 3-byte groups
async def test_a_credential_echoed_into_a_bytes_field_is_masked_in_its_base64(
    channels: GrpcChannels, lead: bytes
) -> None:
    """The finding: the JSON of a bytes field is base64, which the mask did not search: a backend echoing the token
    into one handed it to the MCP client."""

    async def echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        token = dict(context.invocation_metadata() or ())["authorization"].removeprefix("Bearer ").encode()
        thumbnail = lead + token + b"-tail"
        return b"\x0a\x011" + _varint((15 << 3) | 2) + _varint(len(thumbnail)) + thumbnail

    async with answering(grpc.unary_unary_rpc_method_handler(echo)) as target:
        shop = GrpcBackend(SHOP, channels, target=target, credentials=Bearer(TOKEN))
        result = await shop.call(SHOP.operation("GetItem"), {"id": "1"})
    assert isinstance(result, JsonBody) and "***" in result.value["thumbnail"]
    assert not [form for form in base64_forms(TOKEN) if form in result.text]
