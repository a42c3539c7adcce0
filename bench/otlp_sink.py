"""A local OTLP/HTTP trace receiver for benchmarks: decodes every export, counts the spans, answers at once.

python -m bench.otlp_sink PORT      (GET /count: spans received so far)
"""

from __future__ import annotations

import sys

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

REPLY = ExportTraceServiceResponse().SerializeToString()


def create_app() -> web.Application:
    counted = [0]

    async def traces(request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        counted[0] += sum(len(scope.spans) for group in message.resource_spans for scope in group.scope_spans)
        return web.Response(body=REPLY, content_type="application/x-protobuf")

    async def count(_: web.Request) -> web.Response:
        return web.json_response({"spans": counted[0]})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", traces)
    app.router.add_get("/count", count)
    return app


if __name__ == "__main__":
    web.run_app(create_app(), host="127.0.0.1", port=int(sys.argv[1]), print=None)
