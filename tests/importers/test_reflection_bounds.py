"""gRPC server reflection against a hostile server: answers are read one message at a time and cut off past
the fetch's byte limit or past one answer per question; credentials a server echoes are masked."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2 as pb

from apimcp.importers.errors import SpecError
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.fetch import Fetcher, FetchLimits
from tests.support.fetching import LOOPBACK_ALLOWED, loopback_fetcher

Answer = Callable[[pb.ServerReflectionRequest, grpc.ServicerContext], Iterator[pb.ServerReflectionResponse]]
LIMIT = 64 * 1024


@contextmanager
def reflecting(answer: Answer) -> Iterator[str]:
    """A reflection-like server on loopback whose answers to each request `answer` makes; its URL."""

    def session(
        requests: Iterator[pb.ServerReflectionRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        for request in requests:
            yield from answer(request, context)

    method = grpc.stream_stream_rpc_method_handler(
        session, pb.ServerReflectionRequest.FromString, pb.ServerReflectionResponse.SerializeToString
    )
    handler = grpc.method_handlers_generic_handler(
        "grpc.reflection.v1.ServerReflection", {"ServerReflectionInfo": method}
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"grpc://127.0.0.1:{port}"
    finally:
        server.stop(None)


def listing(*names: str) -> pb.ServerReflectionResponse:
    response = pb.ServerReflectionResponse()
    response.list_services_response.service.extend(pb.ServiceResponse(name=name) for name in names)
    return response


def reflected(url: str, metadata: tuple[tuple[str, str], ...] = ()) -> None:
    import_protobuf(url, timeout_seconds=10, metadata=metadata, fetcher=loopback_fetcher(FetchLimits(max_bytes=LIMIT)))


# --- finding: reflection read every answer of a round into memory, without a cap ----------------------------------


def test_reflection_answering_more_than_once_per_question_is_cut_off() -> None:
    sent: list[int] = []

    def endless(
        request: pb.ServerReflectionRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        while context.is_active() and len(sent) < 10_000:  # the bound only stops a regression
            sent.append(1)
            yield listing("a.S")

    with (
        reflecting(endless) as url,
        pytest.raises(SpecError, match=r"sent more answers than the 1 questions it was asked"),
    ):
        reflected(url)
    assert len(sent) < 10_000


def test_reflection_answers_past_the_byte_limit_are_cut_off() -> None:
    """Every message fits the limit; together they do not."""

    def padded(
        request: pb.ServerReflectionRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        if request.HasField("list_services"):
            yield listing("a.S", "a.T", "a.U")
            return
        response = pb.ServerReflectionResponse()
        response.file_descriptor_response.file_descriptor_proto.append(b"\0" * (LIMIT // 2))
        yield response

    with reflecting(padded) as url, pytest.raises(SpecError, match=rf"sent more than the {LIMIT} bytes allowed"):
        reflected(url)


def test_a_reflection_message_past_the_byte_limit_is_refused_by_the_channel() -> None:
    def huge(
        request: pb.ServerReflectionRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        yield listing("a." + "S" * LIMIT)

    with (
        reflecting(huge) as url,
        pytest.raises(SpecError, match=rf"RESOURCE_EXHAUSTED: .*answers may hold {LIMIT} bytes"),
    ):
        reflected(url)


def test_reflection_answering_fewer_messages_than_questions_is_refused() -> None:
    def silent(
        request: pb.ServerReflectionRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        if request.HasField("list_services"):
            yield listing("a.S")

    with reflecting(silent) as url, pytest.raises(SpecError, match=r"sent 0 answers to the 1 questions it was asked"):
        reflected(url)


# --- finding: credentials were masked by str.replace, which spliced `***` everywhere for an empty value -------------


def test_reflection_masks_echoed_credentials_with_the_secret_mask() -> None:
    def echo(
        request: pb.ServerReflectionRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ServerReflectionResponse]:
        sent = {key: value for key, value in context.invocation_metadata() if isinstance(value, str)}
        context.abort(
            grpc.StatusCode.PERMISSION_DENIED, f"{sent['authorization']} may not reflect (user {sent['x-user']})"
        )
        yield from ()

    credentials = (("authorization", "Bearer s3cret-token"), ("x-empty", ""), ("x-user", "bob"))
    with reflecting(echo) as url, pytest.raises(SpecError) as refused:
        reflected(url, credentials)
    assert refused.value.message == "server reflection failed: gRPC PERMISSION_DENIED: *** may not reflect (user bob)"


@pytest.mark.parametrize("url", ["grpc://[::1", "grpcs://host.example:99999"])
def test_a_malformed_reflection_url_raised_value_error(url: str) -> None:
    """urlsplit's ValueError escaped the importer: a 500 in the control plane."""
    with pytest.raises(SpecError, match=url.replace("[", r"\[")):
        import_protobuf(url, fetcher=loopback_fetcher(), timeout_seconds=1)


def test_the_name_lookup_of_a_reflection_url_had_no_deadline() -> None:
    """The lookup is bounded by the import's deadline: reflection gives up without waiting for a resolver
    that does not answer (it is released afterwards)."""
    release = threading.Event()
    finished = threading.Event()

    def hanging(host: str, port: int) -> list[ipaddress.IPv4Address]:
        release.wait(30)
        finished.set()
        return [ipaddress.IPv4Address("127.0.0.1")]

    fetcher = Fetcher(LOOPBACK_ALLOWED, FetchLimits(), hanging)
    try:
        with pytest.raises(SpecError, match=r"no answer from a gRPC server at slow\.test:50051"):
            import_protobuf("grpc://slow.test:50051", fetcher=fetcher, timeout_seconds=0.3)
        assert not finished.is_set()  # the import did not wait for the lookup to end
    finally:
        release.set()
