"""apimcp's own span path: W3C trace context, samplers, the `OTEL_*` settings, the OTLP encoding (decoded
with the official OTLP messages) and the batching exporter."""

from __future__ import annotations

import io
import json
import threading

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from apimcp.telemetry import Telemetry, flush, install, installed
from apimcp.telemetry.config import TelemetryConfigError
from apimcp.telemetry.environment import batch_settings_from, otlp_settings_from, resource_from
from apimcp.telemetry.export import (
    BatchExporter,
    BatchSettings,
    CollectorRefused,
    ConsoleSender,
    OtlpHttpSender,
    OtlpSettings,
)
from apimcp.telemetry.otlp_encoding import Encoder
from apimcp.telemetry.sampling import Sampler, sampler_from
from apimcp.telemetry.spans import CLIENT, SERVER, Span
from apimcp.telemetry.trace_context import SpanContext, incoming, parse_traceparent
from apimcp.telemetry.tracing import Tracing

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class Kept:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def add(self, span: Span) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        pass


def test_a_traceparent_is_read_exactly_or_not_at_all() -> None:
    context = parse_traceparent(f"00-{TRACE}-{PARENT}-01", "congo=t61rcWkgMzE")
    assert context == SpanContext(int(TRACE, 16), int(PARENT, 16), 1, "congo=t61rcWkgMzE")
    assert parse_traceparent(f"00-{TRACE}-{PARENT}-00") == SpanContext(int(TRACE, 16), int(PARENT, 16), 0)
    assert parse_traceparent(f"01-{TRACE}-{PARENT}-01-future") is not None  # a later version's prefix
    for bad in [f"00-{TRACE}-{PARENT}-01-extra", f"ff-{TRACE}-{PARENT}-01", f"00-{'0' * 32}-{PARENT}-01",
                f"00-{TRACE}-{'0' * 16}-01", f"00-{TRACE.upper()}-{PARENT}-01", f"00-{TRACE[:-1]}-{PARENT}-01",
                f"00-{TRACE}-{PARENT}-1", "garbage", ""]:  # fmt: skip
        assert parse_traceparent(bad) is None, bad
    assert parse_traceparent(f"00-{TRACE}-{PARENT}-01", "k=" + "v" * 600) == SpanContext(
        int(TRACE, 16), int(PARENT, 16), 1
    )  # an over-long tracestate is dropped, the trace kept
    for odd in ["a=\xe9", "a=1\x00", "a=\x7f"]:  # not printable ASCII: dropped (OTLP strings are UTF-8)
        assert parse_traceparent(f"00-{TRACE}-{PARENT}-01", odd) == SpanContext(int(TRACE, 16), int(PARENT, 16), 1)
    spaced = parse_traceparent(f"00-{TRACE}-{PARENT}-01", "a=1 ,\tb=2")
    assert spaced is not None and spaced.tracestate == "a=1 ,\tb=2"
    two = [(b"traceparent", f"00-{TRACE}-{PARENT}-01".encode())] * 2
    assert incoming(two) is None
    joined = [(b"traceparent", f"00-{TRACE}-{PARENT}-01".encode()), (b"tracestate", b"a=1"), (b"tracestate", b"b=2")]
    assert incoming(joined) == SpanContext(int(TRACE, 16), int(PARENT, 16), 1, "a=1,b=2")


def test_samplers_follow_the_parent_or_the_trace_id() -> None:
    sampled, unsampled = SpanContext(1, 2, 1), SpanContext(1, 2, 0)
    assert sampler_from({}) == Sampler(1.0, parent_based=True)
    assert not Sampler(1.0).sampled(5, unsampled) and Sampler(0.0).sampled(5, sampled)
    assert Sampler(0.0, parent_based=False).sampled(5, sampled) is False
    ratio = sampler_from({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"})
    kept = sum(ratio.sampled(trace_id * 0x9E3779B97F4A7C15 % (1 << 128), None) for trace_id in range(1, 20001))
    assert 4500 < kept < 5500
    assert ratio.sampled((1 << 64) // 4 - 1, None) and not ratio.sampled((1 << 64) // 4, None)
    for environ, named in [({"OTEL_TRACES_SAMPLER": "jaeger_remote"}, "OTEL_TRACES_SAMPLER"),
                           ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
                            "OTEL_TRACES_SAMPLER_ARG")]:  # fmt: skip
        with pytest.raises(TelemetryConfigError, match=named):
            sampler_from(environ)


def test_the_exporter_settings_follow_the_otlp_variables() -> None:
    assert otlp_settings_from({}).endpoint == "http://localhost:4318/v1/traces"
    base = otlp_settings_from({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318/"})
    assert base.endpoint == "https://c.example:4318/v1/traces"
    full = otlp_settings_from(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/t"}
    )
    assert full.endpoint == "http://b:2/t"
    given = otlp_settings_from(
        {
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cr%3Dt,x-team=gw",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        }
    )
    assert given.headers == {"api-key": "s3cr=t", "x-team": "gw"} and given.timeout == 2.5 and given.gzip
    assert "s3cr" not in repr(given)
    assert batch_settings_from({"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_BSP_MAX_QUEUE_SIZE": "100"}) == BatchSettings(
        schedule_delay=0.05, max_queue=100, max_batch=100
    )
    for environ, named in [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:port"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret%0D%0AX-Evil: 1"}, "OTEL_EXPORTER_OTLP_HEADERS"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "bad name=secret"}, "OTEL_EXPORTER_OTLP_HEADERS"),
        ({"OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign-secret"}, "OTEL_EXPORTER_OTLP_HEADERS"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "-5"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ({"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "20"}, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        ({"OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY"),
    ]:
        read = batch_settings_from if named.startswith("OTEL_BSP") else otlp_settings_from
        with pytest.raises(TelemetryConfigError, match=named) as refused:
            read(environ)
        assert "secret" not in str(refused.value)
    resource = resource_from({"OTEL_RESOURCE_ATTRIBUTES": "service.name=a,deployment.environment=prod"})
    assert resource["service.name"] == "a" and resource["deployment.environment"] == "prod"
    assert (
        resource_from({"OTEL_SERVICE_NAME": "b", "OTEL_RESOURCE_ATTRIBUTES": "service.name=a"})["service.name"] == "b"
    )


def test_the_encoding_is_what_the_official_otlp_messages_read() -> None:
    kept = Kept()
    tracing = Tracing(kept)
    parent = SpanContext(int(TRACE, 16), int(PARENT, 16), 1, "congo=1")
    server = tracing.server_span("tools/call", parent, {"mcp.method.name": "tools/call", "n": -3, "flag": True})
    client = server.child("GET /items/{id}", CLIENT, {"http.response.status_code": 503, "big": 1 << 40})
    client.fail("backend failure (status 503)")
    client.end()
    server.name = "tools/call get_item"
    server.end()
    encoder = Encoder({"service.name": "apimcp", "pid": 7}, "apimcp", "0.1.0")
    for _ in range(2):  # the second time from the caches
        message = ExportTraceServiceRequest()
        message.ParseFromString(encoder.request(kept.spans))
        (group,) = message.resource_spans
        assert {a.key: a.value.string_value or a.value.int_value for a in group.resource.attributes} == {
            "service.name": "apimcp", "pid": 7}  # fmt: skip
        (scope,) = group.scope_spans
        assert (scope.scope.name, scope.scope.version) == ("apimcp", "0.1.0")
        got_client, got_server = scope.spans
        assert got_server.trace_id.hex() == TRACE and got_server.parent_span_id.hex() == PARENT
        assert got_server.name == "tools/call get_item" and got_server.kind == SERVER
        assert got_server.trace_state == "congo=1" and got_server.flags == 1
        assert {a.key: a.value.WhichOneof("value") for a in got_server.attributes} == {
            "mcp.method.name": "string_value", "n": "int_value", "flag": "bool_value"}  # fmt: skip
        assert [a.value.int_value for a in got_server.attributes if a.key == "n"] == [-3]
        assert got_server.status.code == 0 and got_server.end_time_unix_nano >= got_server.start_time_unix_nano > 0
        assert got_client.parent_span_id == got_server.span_id and got_client.kind == CLIENT
        assert got_client.status.code == 2 and got_client.status.message == "backend failure (status 503)"
        assert {a.key: a.value.int_value for a in got_client.attributes} == {
            "http.response.status_code": 503, "big": 1 << 40}  # fmt: skip
    odd = Tracing(Kept()).server_span("x", SpanContext(1, 2, 1, "a=\xe9"), {})  # made without the parser
    message = ExportTraceServiceRequest()
    message.ParseFromString(encoder.request([odd]))  # still UTF-8: the batch stays decodable
    assert message.resource_spans[0].scope_spans[0].spans[0].trace_state == "a=\xe9"


def test_an_unsampled_span_has_ids_for_the_backend_and_is_never_kept() -> None:
    kept = Kept()
    span = Tracing(kept).server_span("tools/call", SpanContext(int(TRACE, 16), int(PARENT, 16), 0), {})
    assert not span.recording
    assert span.outgoing() == {"traceparent": f"00-{TRACE}-{span.span_id:016x}-00"}
    span.end()
    assert kept.spans == []


def test_the_exporter_sends_in_batches_drops_beyond_its_queue_and_survives_a_failing_collector() -> None:
    batches: list[int] = []
    entered, release = threading.Event(), threading.Event()

    def send(spans: list[Span]) -> None:
        batches.append(len(spans))
        if len(batches) == 1:  # the collector hangs, then fails: that batch is lost, the thread goes on
            entered.set()
            release.wait(10)
            raise OSError("collector down")

    exporter = BatchExporter(send, BatchSettings(schedule_delay=30, max_queue=12, max_batch=4))
    tracing = Tracing(exporter)
    for _ in range(4):  # a full batch wakes the thread at once (not after the 30 s schedule)
        tracing.server_span("tools/list", None, {}).end()
    assert entered.wait(10)
    for _ in range(16):  # meanwhile 12 fit in the queue, 4 are dropped: requests never wait for the collector
        tracing.server_span("tools/list", None, {}).end()
    assert exporter.dropped == 4
    release.set()
    exporter.shutdown()
    assert batches == [4, 4, 4, 4]
    assert exporter.sent == 12


def test_the_console_sender_writes_one_json_object_per_span() -> None:
    out = io.StringIO()
    span = Tracing(Kept()).server_span("tools/list", None, {"mcp.method.name": "tools/list"})
    span.end()
    ConsoleSender(out)([span])
    record = json.loads(out.getvalue())
    assert record["name"] == "tools/list" and record["kind"] == "SERVER" and record["parent_id"] is None


def test_flush_sends_what_is_queued_for_a_worker_that_ends_without_atexit() -> None:
    sent: list[int] = []
    exporter = BatchExporter(lambda spans: sent.append(len(spans)), BatchSettings(schedule_delay=30))
    previous = installed()
    install(Telemetry(tracing=Tracing(exporter)))
    try:
        for _ in range(3):
            installed().tracing.server_span("tools/list", None, {}).end()  # type: ignore[union-attr]
        assert sent == []  # queued: the 30 s schedule has not come
        flush()
    finally:
        install(previous)
    assert sent == [3]


def test_a_forked_child_starts_its_own_export_thread_and_connection() -> None:
    sent: list[int] = []
    exporter = BatchExporter(lambda spans: sent.append(len(spans)), BatchSettings(schedule_delay=30))
    Tracing(exporter).server_span("tools/list", None, {}).end()
    parent_thread = exporter._thread
    assert parent_thread is not None
    parent_wake = exporter._wake
    exporter._forked()  # what `os.fork` runs in the child
    assert exporter._thread is None and not exporter._queue
    Tracing(exporter).server_span("tools/list", None, {}).end()
    assert exporter._thread is not None and exporter._thread is not parent_thread
    exporter.shutdown()
    parent_wake.set()  # (the "parent's" thread, in this same process, ends too)
    parent_thread.join(10)
    assert sent == [1]
    sender = OtlpHttpSender(OtlpSettings(), Encoder({}, "apimcp", "0"))
    sender._connection = sender._connect()
    sender.forked()
    assert sender._connection is None


def test_a_refused_export_logs_the_collectors_status(caplog: pytest.LogCaptureFixture) -> None:
    def send(spans: list[Span]) -> None:
        raise CollectorRefused("the collector answered 401")

    exporter = BatchExporter(send, BatchSettings(schedule_delay=30))
    with caplog.at_level("WARNING", logger="apimcp.telemetry"):
        Tracing(exporter).server_span("tools/list", None, {}).end()
        exporter.shutdown()
    assert "spans not exported (1 lost): the collector answered 401" in caplog.text
