"""A real grpc.aio server of shop.v1.ShopService (tests/support/protos), built without generated code.

Message classes come from the descriptor set compiled in-process; handlers are
generic; server reflection is on. With `health=True` the server also offers the
standard health service (grpc.health.v1.Health), and with `shop=False` only
that. `running_server()` runs it on its own thread
and event loop (so sync tests, async tests and blocking reflection imports all
reach it); `python -m tests.support.grpc_server --port N` runs it in the
foreground, e.g. as a benchmark backend.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_reflection.v1alpha import reflection

from apimcp.importers.protobuf import compile_protos

PROTOS = Path(__file__).resolve().parent / "protos"
SHOP_PROTO = "shop/v1/shop.proto"
SERVICE = "shop.v1.ShopService"
HEALTH_PROTO = "grpc/health/v1/health.proto"
HEALTH_SERVICE = "grpc.health.v1.Health"


@functools.cache
def descriptor_set() -> bytes:
    return compile_protos([SHOP_PROTO], [str(PROTOS)])


@functools.cache
def health_descriptor_set() -> bytes:
    return compile_protos([HEALTH_PROTO], [str(PROTOS)])


class Health:
    """The standard health service: SERVING for the server as a whole and for the shop, NOT_FOUND
    for any other service (as the health checking protocol says)."""

    def __init__(self, pool: descriptor_pool.DescriptorPool) -> None:
        def message(name: str) -> type[Message]:
            return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"grpc.health.v1.{name}"))

        self.request, self.response = message("HealthCheckRequest"), message("HealthCheckResponse")

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            HEALTH_SERVICE,
            {
                "Check": grpc.unary_unary_rpc_method_handler(
                    self.check, self.request.FromString, self.response.SerializeToString
                ),
                "Watch": grpc.unary_stream_rpc_method_handler(
                    self.watch, self.request.FromString, self.response.SerializeToString
                ),
            },
        )

    async def check(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if request.service not in ("", SERVICE):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service}")
        return self.response(status="SERVING")

    async def watch(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Message]:
        yield self.response(status="SERVING" if request.service in ("", SERVICE) else "SERVICE_UNKNOWN")


@dataclass(frozen=True)
class ServerTls:
    cert_pem: bytes
    key_pem: bytes
    client_ca_pem: bytes | None = None
    """When set, clients must present a certificate issued by this CA."""


class Shop:
    """The service's behaviour; message classes live in a private pool."""

    def __init__(self) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set()).file:
            self.pool.Add(file)
        self.m: dict[str, type[Message]] = {}
        for name in (
            "GetItemRequest",
            "Item",
            "ListItemsRequest",
            "Line",
            "Total",
            "ChatMessage",
            "FailRequest",
            "SleepRequest",
            "Caller",
            "Money",
        ):
            self.m[name] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(f"shop.v1.{name}"))
        self.m["Empty"] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName("google.protobuf.Empty"))

    def handler(self) -> grpc.GenericRpcHandler:
        m = self.m

        def unary(fn: Callable[..., Any], request: str, response: str) -> grpc.RpcMethodHandler:
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=m[request].FromString, response_serializer=m[response].SerializeToString
            )

        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "GetItem": unary(self.get_item, "GetItemRequest", "Item"),
                "PutItem": unary(self.put_item, "Item", "Item"),
                "ListItems": grpc.unary_stream_rpc_method_handler(
                    self.list_items, m["ListItemsRequest"].FromString, m["Item"].SerializeToString
                ),
                "AddLines": unary(self.add_line, "Line", "Total"),
                "SumLines": grpc.stream_unary_rpc_method_handler(
                    self.sum_lines, m["Line"].FromString, m["Total"].SerializeToString
                ),
                "Chat": grpc.stream_stream_rpc_method_handler(
                    self.chat, m["ChatMessage"].FromString, m["ChatMessage"].SerializeToString
                ),
                "Fail": unary(self.fail, "FailRequest", "Empty"),
                "Sleep": unary(self.sleep, "SleepRequest", "Empty"),
                "WhoAmI": unary(self.who_am_i, "Empty", "Caller"),
                "OldPing": unary(self.old_ping, "Empty", "Empty"),
            },
        )

    async def get_item(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if request.id == "missing":
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no item {request.id!r}")
        item = self.m["Item"](id=request.id, title=f"Item {request.id}", category="BOOKS", tags=["new", "sale"])
        item.price.currency_code = "EUR"
        item.price.units = 12345678901234567
        item.price.nanos = 500000000
        return item

    async def put_item(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        return request  # type: ignore[no-any-return]

    async def list_items(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Message]:
        for i in range(request.count):
            if i and request.delay_ms:
                await asyncio.sleep(request.delay_ms / 1000)
            yield self.m["Item"](id=str(i), title=f"Item {i}")

    async def add_line(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        return self.m["Total"](quantity=request.quantity, lines=1)

    async def sum_lines(self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        total = self.m["Total"]()
        async for line in requests:
            total.quantity += line.quantity
            total.lines += 1
        return total

    async def chat(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Message]:
        async for message in requests:
            yield self.m["ChatMessage"](text=f"echo: {message.text}")

    async def fail(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        bad = error_details_pb2.BadRequest()
        violation = bad.field_violations.add()
        violation.field, violation.description = "reason", f"{request.reason!r} is not acceptable"
        info = error_details_pb2.ErrorInfo(reason="NOT_ACCEPTABLE", domain="shop.example.com", metadata={"k": "v"})
        status = status_pb2.Status(code=grpc.StatusCode.INVALID_ARGUMENT.value[0], message="the request is refused")
        for detail in (bad, info):
            status.details.add().Pack(detail)
        status.details.append(any_pb2.Any(type_url="type.example.com/shop.v1.Secret", value=b"\x08\x01"))
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            "the request is refused",
            trailing_metadata=(("grpc-status-details-bin", status.SerializeToString()),),
        )
        raise AssertionError("abort returns never")

    async def sleep(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        await asyncio.sleep(request.millis / 1000)
        return self.m["Empty"]()

    async def who_am_i(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        metadata = {key: value for key, value in context.invocation_metadata() or () if isinstance(value, str)}
        return self.m["Caller"](metadata=metadata)

    async def old_ping(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        return self.m["Empty"]()


async def start(
    host: str = "127.0.0.1", port: int = 0, tls: ServerTls | None = None, *, shop: bool = True, health: bool = False
) -> tuple[grpc.aio.Server, int]:
    store = Shop()
    server = grpc.aio.server()
    names = [reflection.SERVICE_NAME]
    if shop:
        server.add_generic_rpc_handlers((store.handler(),))
        names.append(SERVICE)
    if health:
        for file in descriptor_pb2.FileDescriptorSet.FromString(health_descriptor_set()).file:
            store.pool.Add(file)
        server.add_generic_rpc_handlers((Health(store.pool).handler(),))
        names.append(HEALTH_SERVICE)
    reflection.enable_server_reflection(names, server, pool=store.pool)
    address = f"{host}:{port}"
    if tls is None:
        bound = server.add_insecure_port(address)
    else:
        credentials = grpc.ssl_server_credentials(
            [(tls.key_pem, tls.cert_pem)],
            root_certificates=tls.client_ca_pem,
            require_client_auth=tls.client_ca_pem is not None,
        )
        bound = server.add_secure_port(address, credentials)
    await server.start()
    return server, bound


@dataclass(frozen=True)
class RunningServer:
    port: int
    host: str = "127.0.0.1"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@contextmanager
def running_server(
    tls: ServerTls | None = None, *, shop: bool = True, health: bool = False, host: str = "127.0.0.1"
) -> Iterator[RunningServer]:
    """The server on 127.0.0.1 (or another loopback `host`) on a free port, on a thread of its own, stopped on
    exit."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        try:
            server, port = await start(host, tls=tls, shop=shop, health=health)
        except BaseException as exc:
            state["error"] = exc
            ready.set()
            raise
        stop = asyncio.Event()
        state.update(port=port, loop=asyncio.get_running_loop(), stop=stop)
        ready.set()
        await stop.wait()
        await server.stop(grace=None)

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="grpc-test-server", daemon=True)
    thread.start()
    ready.wait(30)
    if "error" in state:
        thread.join(5)
        raise RuntimeError("the test gRPC server did not start") from state["error"]
    try:
        yield RunningServer(state["port"], host)
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(10)


class _Every(grpc.GenericRpcHandler):
    def __init__(self, handler: Any) -> None:
        self._handler = handler

    def service(self, handler_call_details: Any) -> Any:
        return self._handler


@asynccontextmanager
async def answering(handler: Any) -> AsyncIterator[str]:
    """A server on the running loop whose every method is `handler` (a `grpc.*_rpc_method_handler` of bytes): the
    answers a test writes byte by byte, whatever a shop's would be. Yields its target."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_Every(handler),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


async def _serve_forever(host: str, port: int) -> None:
    server, bound = await start(host, port)
    print(f"shop.v1.ShopService listening on {host}:{bound}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50051)
    arguments = parser.parse_args()
    asyncio.run(_serve_forever(arguments.host, arguments.port))
