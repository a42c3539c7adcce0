"""A tiny OTLP/HTTP trace receiver for tests: what an exporter really sends, decoded with opentelemetry-proto."""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int
    service_name: str

    @property
    def is_server(self) -> bool:
        return self.kind == Span.SPAN_KIND_SERVER

    @property
    def is_client(self) -> bool:
        return self.kind == Span.SPAN_KIND_CLIENT

    @property
    def failed(self) -> bool:
        return self.status_code == 2  # STATUS_CODE_ERROR


def _value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    return getattr(value, field) if field is not None else None


class Receiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        self.url = ""

    async def traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        received = [
            ReceivedSpan(
                name=span.name,
                kind=span.kind,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
                attributes={a.key: _value(a.value) for a in span.attributes},
                status_code=span.status.code,
                service_name=str({a.key: _value(a.value) for a in group.resource.attributes}.get("service.name")),
            )
            for group in message.resource_spans
            for scope_spans in group.scope_spans
            for span in scope_spans.spans
        ]
        with self._lock:
            self.requests += 1
            self.spans.extend(received)
        reply = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=reply, content_type="application/x-protobuf")

    def wait_for(self, found: Callable[[list[ReceivedSpan]], bool], seconds: float = 15) -> list[ReceivedSpan]:
        """Every span received, once `found` says what the test waits for is among them."""
        deadline = time.monotonic() + seconds
        while True:
            with self._lock:
                spans = list(self.spans)
            if found(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"not received within {seconds} s; spans: {[s.name for s in spans]}")
            time.sleep(0.02)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver at `receiver.url` (http://127.0.0.1:PORT, the exporter posts to /v1/traces)."""
    receiver = Receiver()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner_box: list[web.AppRunner] = []

    async def start() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/traces", receiver.traces)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        receiver.url = f"http://127.0.0.1:{port}"
        runner_box.append(runner)
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield receiver
    finally:
        asyncio.run_coroutine_threadsafe(runner_box[0].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
