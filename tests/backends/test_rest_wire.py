"""What REST backends put on the wire for hostile arguments: dot-segments, control characters in headers.

A raw loopback server records the request line and headers exactly as they
arrived, so nothing between the gateway and the backend (yarl, aiohttp, a
server framework) can hide a normalised path.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from apimcp.backends.base import Failure, JsonBody
from apimcp.backends.credentials import ApiKey, Bearer
from apimcp.backends.rest import RestBackend, _body, close_session, in_utf8, new_session
from apimcp.backends.rest_request import InvalidArgument, build_request
from apimcp.catalog.model import Operation, ParameterBinding, RestBinding, Service
from apimcp.safety.masking import SecretMask

pytestmark = pytest.mark.anyio


ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"


@dataclass
class RawServer:
    url: str = ""
    targets: list[str] = field(default_factory=list)
    headers: list[list[str]] = field(default_factory=list)


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    server = RawServer()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        lines = []
        while (header := await reader.readline()) not in (b"\r\n", b""):
            lines.append(header.decode("latin-1").rstrip("\r\n"))
        server.targets.append(line.decode("latin-1").split(" ")[1])
        server.headers.append(lines)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        await writer.drain()
        writer.close()

    listening = await asyncio.start_server(handle, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        listening.close()
        await listening.wait_closed()


def operation(path: str, *parameters: ParameterBinding) -> Operation:
    return Operation("op", {"type": "object"}, RestBinding(method="GET", path=path, parameters=parameters))


def path_parameter(name: str = "name", style: str = "simple") -> ParameterBinding:
    return ParameterBinding(argument=name, name=name, location="path", style=style, explode=False)  # type: ignore[arg-type]


def header(argument: str, name: str) -> ParameterBinding:
    return ParameterBinding(argument=argument, name=name, location="header", style="simple", explode=False)


async def call(server: RawServer, op: Operation, arguments: dict[str, Any]) -> Any:
    session = new_session()
    try:
        backend = RestBackend(Service("s", "1", (op,)), session, base_url=f"{server.url}/api")
        return await backend.call(op, arguments)
    finally:
        await close_session(session)


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("..", "/api/files/%2E%2E/raw"),
        (".", "/api/files/%2E/raw"),
        ("../../admin", "/api/files/%2E%2E%2F%2E%2E%2Fadmin/raw"),
        ("a\\..\\b", "/api/files/a%5C%2E%2E%5Cb/raw"),
        ("%2e%2e", "/api/files/%252e%252e/raw"),  # already data: its % is encoded
        ("report.v2.pdf", "/api/files/report.v2.pdf/raw"),  # dots inside a name are left alone
        ("...", "/api/files/.../raw"),  # not a dot-segment
    ],
)
async def test_dot_dot_in_a_path_parameter_is_no_longer_sent_as_a_literal_dot_segment(
    raw_server: RawServer, value: str, sent: str
) -> None:
    """Finding: `..` went out as `/files/../raw`, which the backend resolved to `/raw`."""
    result = await call(raw_server, operation("/files/{name}/raw", path_parameter()), {"name": value})
    assert isinstance(result, JsonBody), result
    assert raw_server.targets == [sent]


async def test_dot_segments_made_of_two_parameters_or_a_label_prefix_are_encoded_too(raw_server: RawServer) -> None:
    two = operation("/x/{a}{b}/y", path_parameter("a"), path_parameter("b"))
    label = operation("/x/{a}/y", path_parameter("a", "label"))
    assert isinstance(await call(raw_server, two, {"a": ".", "b": "."}), JsonBody)
    assert isinstance(await call(raw_server, label, {"a": "."}), JsonBody)
    assert raw_server.targets == ["/api/x/%2E%2E/y", "/api/x/%2E%2E/y"]


@pytest.mark.parametrize("value", ["a\r\nInjected: yes", "a\nb", "a\rb", "a\x00b", "a\x1bb", "a\x7fb"])
async def test_cr_lf_nul_in_a_header_parameter_give_a_tool_error_naming_the_argument(
    raw_server: RawServer, value: str
) -> None:
    """Finding: aiohttp's ValueError escaped the backend (JSON-RPC -32603, a traceback in the log)."""
    op = operation("/h", header("trace", "X-Trace"))
    result = await call(raw_server, op, {"trace": value})
    assert isinstance(result, Failure)
    assert result.message.startswith("Invalid arguments: argument 'trace': a header parameter cannot be sent: ")
    assert "control character" in result.message
    assert raw_server.targets == []  # nothing was sent


async def test_tabs_and_non_ascii_letters_are_fine_in_headers(raw_server: RawServer) -> None:
    op = operation("/h", header("trace", "X-Trace"))
    assert isinstance(await call(raw_server, op, {"trace": "a\tb"}), JsonBody)
    assert "X-Trace: a\tb" in raw_server.headers[0]


async def test_cr_lf_in_a_cookie_parameter_are_encoded_not_injected(raw_server: RawServer) -> None:
    op = operation("/c", ParameterBinding(argument="s", name="session", location="cookie", style="form", explode=True))
    assert isinstance(await call(raw_server, op, {"s": "a\r\nSet-Cookie: x=1; b"}), JsonBody)
    cookie = [h for h in raw_server.headers[0] if h.lower().startswith("cookie:")]
    assert cookie == ["Cookie: session=a%0D%0ASet-Cookie%3A%20x%3D1%3B%20b"]


def test_the_checks_happen_while_building_the_request() -> None:
    binding = RestBinding(method="GET", path="/h", parameters=(header("t", "X-T"),))
    with pytest.raises(InvalidArgument, match="LF, which an HTTP header cannot carry"):
        build_request(binding, {"t": "a\nb"}, "http://h")
    listed = RestBinding(method="GET", path="/h", parameters=(header("t", "X-T"),))
    with pytest.raises(InvalidArgument, match="NUL"):
        build_request(listed, {"t": ["ok", "a\x00"]}, "http://h")


async def test_a_credential_with_a_line_break_is_a_tool_error_not_a_crash(raw_server: RawServer) -> None:
    """The same class of bug in credentials (a token pasted with its newline): named, never shown, not sent."""
    op = operation("/h")
    session = new_session()
    try:
        for credentials, header in (
            (Bearer("token-value\n"), "Authorization"),
            (ApiKey("X-Key", "k\r\nX: 1"), "X-Key"),
        ):
            backend = RestBackend(Service("s", "1", (op,)), session, base_url=raw_server.url, credentials=credentials)
            result = await backend.call(op, {})
            assert isinstance(result, Failure)
            assert result.message == (
                f"The backend credentials cannot be sent: the value of the {header} header: it holds the control "
                f"character {'LF' if header == 'Authorization' else 'CR'}, which an HTTP header cannot carry"
            )
    finally:
        await close_session(session)
    assert raw_server.targets == []


@pytest.mark.parametrize(
    ("body", "media_type", "written"),
    [
        ('{"name": "café"}'.encode("latin-1"), "application/json; charset=ISO-8859-1", '{"name": "café"}'),
        ("café crème".encode("cp1252"), 'text/plain; charset="windows-1252"', "café crème"),
        ("token: s3cr3t-v4lue".encode("utf-16"), "text/plain; charset=utf-16", "token: s3cr3t-v4lue"),
        ('{"token": "s3cr3t"}\n'.encode("utf-16"), "application/x-ndjson; charset=utf-16", '{"token": "s3cr3t"}\n'),
        (b"caf\xc3\xa9", "text/plain; charset=utf-8", "café"),
        (b"caf\xe9", "text/plain", "caf\ufffd"),  # no charset named: UTF-8, as before
        (b"caf\xe9", "text/plain; charset=made-up", "caf\ufffd"),  # one Python does not know: as it came
        (b"caf\xe9", "text/plain; charset=rot13", "caf\ufffd"),  # a codec that is no text encoding: as it came
    ],
)
def test_a_text_answer_is_read_in_the_charset_it_names(body: bytes, media_type: str, written: str) -> None:
    """The finding: the charset was dropped and every text read as UTF-8 (Latin-1 became U+FFFD), and the masking of
    secrets, which knows their UTF-8 spellings, let a UTF-16 echo of one through."""
    assert in_utf8(body, media_type).decode("utf-8", "replace") == written


def test_a_utf_16_echo_of_a_secret_is_masked() -> None:
    echo = "Authorization: Bearer s3cr3t-v4lue".encode("utf-16")
    assert SecretMask(["s3cr3t-v4lue"]).mask_bytes(in_utf8(echo, "text/plain; charset=utf-16")) == (
        b"Authorization: Bearer ***"
    )


def test_a_binary_answer_naming_a_charset_is_left_alone() -> None:
    image = b"\x89PNG\r\n\x1a\n\xff\xfe"
    assert in_utf8(image, "image/png; charset=utf-16") is image


def test_a_json_answer_starting_with_a_byte_order_mark_is_json() -> None:
    """The finding: orjson refuses a UTF-8 byte order mark, so such an answer was passed on as text, without its
    structured content."""
    answer = _body(b'\xef\xbb\xbf{"name": "widget"}', "application/json", 200, "https://a.example/x", 2**20)
    assert isinstance(answer, JsonBody) and answer.value == {"name": "widget"}
