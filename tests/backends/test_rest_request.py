"""Building HTTP requests from tool arguments: the cases the echo and Prism tests cannot see."""

from __future__ import annotations

import asyncio
import base64
import re

import aiohttp
import pytest

from apimcp.backends.credentials import ApiKey, place
from apimcp.backends.rest_request import InvalidArgument, build_request, decode_file
from apimcp.catalog.model import BodyBinding, ParameterBinding, RestBinding


def query(style: str, value: object, explode: bool = False) -> str:
    parameter = ParameterBinding(argument="p", name="color", location="query", style=style, explode=explode)  # type: ignore[arg-type]
    request = build_request(RestBinding(method="GET", path="/x", parameters=(parameter,)), {"p": value}, "http://h")
    return request.url.split("?", 1)[1]


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("form", True, ["blue", "black"], "color=blue&color=black"),
        ("form", False, ["blue", "black"], "color=blue,black"),
        ("form", True, {"R": 100, "G": 200}, "R=100&G=200"),
        ("form", False, {"R": 100, "G": 200}, "color=R,100,G,200"),
        ("spaceDelimited", False, ["blue", "black"], "color=blue%20black"),
        ("spaceDelimited", False, {"R": 100, "G": 200}, "color=R%20100%20G%20200"),
        ("pipeDelimited", False, ["blue", "black"], "color=blue|black"),
        ("pipeDelimited", False, {"R": 100, "G": 200}, "color=R|100|G|200"),
        ("deepObject", True, {"R": 100, "G": 200}, "color%5BR%5D=100&color%5BG%5D=200"),
        ("form", True, True, "color=true"),
        ("form", True, 1.5, "color=1.5"),
    ],
)
def test_query_styles_follow_the_openapi_table(style: str, explode: bool, value: object, expected: str) -> None:
    assert query(style, value, explode) == expected


def test_path_styles_follow_the_openapi_table() -> None:
    def path(style: str, explode: bool, value: object) -> str:
        parameter = ParameterBinding(argument="c", name="color", location="path", style=style, explode=explode)  # type: ignore[arg-type]
        binding = RestBinding(method="GET", path="/{color}", parameters=(parameter,))
        return build_request(binding, {"c": value}, "http://h").url.removeprefix("http://h/")

    assert path("simple", False, {"R": 1, "G": 2}) == "R,1,G,2"
    assert path("simple", True, {"R": 1, "G": 2}) == "R=1,G=2"
    assert path("label", False, ["a", "b"]) == ".a,b"
    assert path("label", True, {"R": 1}) == ".R=1"
    assert path("matrix", True, ["a", "b"]) == ";color=a;color=b"
    assert path("matrix", False, {"R": 1, "G": 2}) == ";color=R,1,G,2"
    assert path("matrix", True, {"R": 1, "G": 2}) == ";R=1;G=2"
    assert path("simple", False, "a b/c?") == "a%20b%2Fc%3F"


def test_credentials_stay_out_of_the_public_url() -> None:
    binding = RestBinding(method="GET", path="/x")
    request = build_request(binding, {}, "http://h", place(ApiKey("key", "secret", "query")))
    assert request.url == "http://h/x?key=secret"
    assert request.public_url == "http://h/x"


def test_missing_path_values_and_bad_files_are_argument_errors() -> None:
    parameter = ParameterBinding(argument="id", name="id", location="path", style="simple", explode=False)
    with pytest.raises(InvalidArgument, match="'id': a path parameter needs a value"):
        build_request(RestBinding(method="GET", path="/{id}", parameters=(parameter,)), {}, "http://h")
    with pytest.raises(InvalidArgument, match="not valid base64"):
        decode_file("f", "***")
    with pytest.raises(InvalidArgument, match="needs a comma"):
        decode_file("f", "data:image/png;base64")
    assert decode_file("f", "data:text/plain,hello%20you") == (b"hello you", "text/plain")
    assert decode_file("f", base64.urlsafe_b64encode(b"\xfb\xff").decode().rstrip("=")) == (b"\xfb\xff", None)


def _multipart(fields: dict[str, object], binding: BodyBinding) -> bytes:
    request = build_request(RestBinding(method="POST", path="/u", body=binding), fields, "http://h")
    assert isinstance(request.body, aiohttp.FormData)
    payload = request.body()

    class Sink:
        def __init__(self) -> None:
            self.data = b""

        async def write(self, chunk: bytes) -> None:
            self.data += chunk

    sink = Sink()
    asyncio.run(payload.write(sink))  # type: ignore[arg-type]
    return sink.data


def _parts(body: bytes) -> list[tuple[str, str | None, bytes]]:
    """(field name, content type, content) of each multipart part."""
    boundary = body.split(b"\r\n", 1)[0]
    parts = []
    for chunk in body.split(boundary)[1:-1]:
        head, _, content = chunk.strip(b"\r\n").partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n"))
        name = headers["Content-Disposition"].split('name="', 1)[1].split('"', 1)[0]
        parts.append((name, headers.get("Content-Type"), content))
    return parts


def test_multipart_arrays_are_one_part_per_item() -> None:
    binding = BodyBinding(
        media_type="multipart/form-data",
        kind="multipart",
        argument=None,
        fields=("files", "tags", "meta"),
        binary_fields=frozenset({"files"}),
        field_media_types={"files": "image/png"},
    )
    arguments = {
        "files": [base64.b64encode(b"one").decode(), "data:text/csv;base64,dHdv"],
        "tags": ["a", "b"],
        "meta": {"k": 1},
    }
    assert _parts(_multipart(arguments, binding)) == [
        ("files", "image/png", b"one"),
        ("files", "text/csv", b"two"),
        ("tags", "text/plain; charset=utf-8", b"a"),
        ("tags", "text/plain; charset=utf-8", b"b"),
        ("meta", "application/json", b'{"k":1}'),
    ]


@pytest.mark.parametrize(
    ("path", "base_url"),
    [
        ("@127.0.0.1:9999/steal", "http://api.example"),  # the backend's name became a user name
        (".evil.example/x", "http://api.example"),  # a name-based backend: another host
        (":9999/x", "http://api.example"),  # another port
        ("{p}/x", "http://api.example"),  # a spec path without its slash, filled by an argument
    ],
)
def test_a_path_that_would_change_the_backend_host_is_refused(path: str, base_url: str) -> None:
    """Finding H1, at the one place REST URLs are built: a path is appended only when it starts with `/`."""
    parameter = ParameterBinding(name="p", location="path", argument="p", style="simple", explode=False)
    binding = RestBinding(method="GET", path=path, parameters=(parameter,) if "{p}" in path else ())
    with pytest.raises(ValueError, match=rf"the path {re.escape(repr(path))} does not start with '/'"):
        build_request(binding, {"p": "@evil.example"}, base_url, place(ApiKey("X-Api-Key", "secret")))
    assert build_request(RestBinding(method="GET", path="/x@y"), {}, base_url).url == f"{base_url}/x@y"


def test_the_gateways_credential_takes_its_own_slot_whatever_the_arguments_name() -> None:
    key = ParameterBinding(argument="key", name="key", location="query", style="form", explode=True)
    spread = ParameterBinding(argument="filter", name="filter", location="query", style="form", explode=True)
    header = ParameterBinding(argument="h", name="x-api-key", location="header", style="simple", explode=False)
    cookie = ParameterBinding(argument="c", name="sid", location="cookie", style="form", explode=True)
    binding = RestBinding(method="GET", path="/x", parameters=(key, spread, header, cookie))
    arguments = {"key": "ATTACKER", "filter": {"key": "ATTACKER", "size": 2}}
    request = build_request(binding, arguments, "http://h", place(ApiKey("key", "secret", "query")))
    assert request.url == "http://h/x?size=2&key=secret"
    assert request.public_url == "http://h/x?size=2"
    request = build_request(binding, {"h": "ATTACKER"}, "http://h", place(ApiKey("X-Api-Key", "secret")))
    assert request.headers == {"X-Api-Key": "secret"}
    request = build_request(binding, {"c": "ATTACKER"}, "http://h", place(ApiKey("sid", "secret", "cookie")))
    assert request.headers["Cookie"] == "sid=secret"
    # without a credential of that name, the arguments go as they are
    request = build_request(binding, {"key": "k", "h": "v", "c": "s"}, "http://h", place(ApiKey("other", "x")))
    assert request.url == "http://h/x?key=k"
    assert request.headers == {"x-api-key": "v", "Cookie": "sid=s", "other": "x"}


def test_allow_reserved_keeps_a_query_value_inside_its_parameter() -> None:
    parameter = ParameterBinding("q", "q", "query", "form", explode=True, allow_reserved=True)
    binding = RestBinding(method="GET", path="/x", parameters=(parameter,))
    credentials = place(ApiKey("key", "secret", "query"))
    assert build_request(binding, {"q": "x&key=ATTACKER"}, "http://h", credentials).url == (
        "http://h/x?q=x%26key%3DATTACKER&key=secret"
    )
    assert build_request(binding, {"q": "x#"}, "http://h", credentials).url == "http://h/x?q=x%23&key=secret"
    assert build_request(binding, {"q": "a+b[0]"}, "http://h").url == "http://h/x?q=a%2Bb%5B0%5D"
    assert build_request(binding, {"q": "a/b?c:d@e,f;g"}, "http://h").url == "http://h/x?q=a/b?c:d@e,f;g"


def test_an_empty_path_value_is_refused_not_sent_as_another_resource() -> None:
    parameter = ParameterBinding(argument="id", name="id", location="path", style="simple", explode=False)
    binding = RestBinding(method="DELETE", path="/items/{id}", parameters=(parameter,))
    for empty in ("", [], {}):
        with pytest.raises(InvalidArgument, match="'id': a path parameter needs a value that is not empty"):
            build_request(binding, {"id": empty}, "http://h")
    assert build_request(binding, {"id": 0}, "http://h").url == "http://h/items/0"
