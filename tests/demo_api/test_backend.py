"""The bundled Bookshelf API: its OpenAPI description, and the backend answering exactly as described."""

from __future__ import annotations

import importlib.resources
import io
import struct
import unicodedata
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

import aiohttp
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from openapi_spec_validator.validation import OpenAPIV31SpecValidator
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from yarl import URL

from apimcp.demo_api import create_app, spec_path, start

SPEC: dict[str, Any] = yaml.safe_load(spec_path().read_text(encoding="utf-8"))
_SPEC_URI = "urn:apimcp:bookshelf"
_REGISTRY: Registry[Any] = Registry().with_resource(_SPEC_URI, DRAFT202012.create_resource(SPEC))
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")

Client = TestClient[web.Request, web.Application]


# --- reading the description ---------------------------------------------------------------------------------


def _operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (METHOD, path, operation)."""
    return {
        op["operationId"]: (method.upper(), path, op)
        for path, item in SPEC["paths"].items()
        for method, op in item.items()
        if method in _METHODS
    }


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _follow(pointer: str) -> tuple[str, Any]:
    """The node at `pointer`, following OpenAPI `$ref`s; returns the final pointer and node."""
    node: Any = SPEC
    for token in pointer.lstrip("/").split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, dict) and "$ref" in node:
        return _follow(node["$ref"].removeprefix("#"))
    return pointer, node


def _schema(pointer: str, name: str) -> Any:
    return _follow(f"{pointer}/{name}")[1]


async def conform(resp: aiohttp.ClientResponse, operation_id: str) -> Any:
    """Check that `resp` is one the description declares for the operation; returns its decoded body."""
    method, path, _ = _operations()[operation_id]
    op_pointer = f"/paths/{_escape(path)}/{method.lower()}"
    declared = _follow(f"{op_pointer}/responses")[1]
    assert str(resp.status) in declared, f"{operation_id} answered an undeclared {resp.status}"
    response_pointer, response = _follow(f"{op_pointer}/responses/{resp.status}")
    body = await resp.read()
    content = response.get("content")
    if not content:
        assert not body
        return None
    assert resp.content_type in content, f"{resp.content_type} is not declared for {operation_id} {resp.status}"
    for header in response.get("headers", {}):
        if header == "Location":
            assert header in resp.headers
    if resp.content_type == "application/json":
        value = await resp.json()
        schema_pointer = f"{response_pointer}/content/{_escape(resp.content_type)}/schema"
        validator = Draft202012Validator(
            {"$ref": f"{_SPEC_URI}#{schema_pointer}"},
            registry=_REGISTRY,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        validator.validate(value)
        return value
    if resp.content_type == "text/plain":
        return body.decode(resp.charset or "utf-8")
    return body


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, checking the signature and every CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, payload = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + payload)
        chunks.append((kind, payload))
        at += 12 + length
    return chunks


def _tiny_png() -> bytes:
    """A 1x1 black PNG, built independently of the backend's encoder."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    )


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with TestClient(TestServer(create_app())) as test_client:
        yield test_client


def _cover_form(data: bytes, caption: str | None = None, name: str = "file") -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field(name, io.BytesIO(data), filename="cover.png", content_type="image/png")
    if caption is not None:
        form.add_field("caption", caption)
    return form


# --- the description -----------------------------------------------------------------------------------------


def test_the_description_is_valid_openapi_3_1() -> None:
    assert SPEC["openapi"] == "3.1.0"
    validate_openapi(SPEC, cls=OpenAPIV31SpecValidator)
    assert SPEC["info"]["title"] == "Bookshelf"
    assert SPEC["info"]["version"] == "1.0.0"
    assert SPEC["info"]["description"]
    assert SPEC["servers"] == [{"url": "http://127.0.0.1:8780", "description": SPEC["servers"][0]["description"]}]
    assert [t["name"] for t in SPEC["tags"]] == ["books", "authors"]


def test_the_validator_would_catch_a_broken_description() -> None:
    broken = yaml.safe_load(spec_path().read_text(encoding="utf-8"))
    del broken["paths"]["/books/{bookId}"]["get"]["parameters"][0]["$ref"]
    with pytest.raises(OpenAPIValidationError, match="is a required property"):
        validate_openapi(broken, cls=OpenAPIV31SpecValidator)


def test_every_operation_is_documented_and_tagged() -> None:
    operations = _operations()
    assert sorted(operations) == sorted(
        [
            "listBooks",
            "addBook",
            "getBook",
            "updateBook",
            "deleteBook",
            "uploadCover",
            "getCover",
            "listReviews",
            "addReview",
            "getAuthor",
            "getStats",
        ]
    )
    for _, _, op in operations.values():
        assert op["summary"]
        assert op["description"]
        assert op["tags"]
        assert set(op["tags"]) <= {"books", "authors"}


def test_every_operation_has_a_route_and_every_route_an_operation() -> None:
    app = create_app()
    routes = {(r.method, r.resource.canonical) for r in app.router.routes() if r.resource is not None}
    own_description = {("GET", "/openapi.yaml"), ("HEAD", "/openapi.yaml")}  # served for import by URL
    assert routes - own_description == {(method, path) for method, path, _ in _operations().values()}
    assert own_description <= routes


@pytest.mark.anyio
async def test_the_api_serves_its_own_description() -> None:
    runner, port = await start("127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/openapi.yaml") as got:
            assert got.status == 200
            assert await got.read() == spec_path().read_bytes()
    finally:
        await runner.cleanup()


def test_the_description_uses_what_the_gateway_supports() -> None:
    def param(operation_id: str, name: str) -> dict[str, Any]:
        method, path, op = _operations()[operation_id]
        pointer = f"/paths/{_escape(path)}/{method.lower()}/parameters"
        found = [_follow(f"{pointer}/{i}")[1] for i in range(len(op["parameters"]))]
        return next(p for p in found if p["name"] == name)

    tags = param("listBooks", "tags")
    assert (tags["in"], tags["style"], tags["explode"], tags["schema"]["type"]) == ("query", "form", False, "array")
    assert param("listBooks", "limit")["schema"] == {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
    assert param("listBooks", "offset")["schema"]["minimum"] == 0
    assert param("getBook", "bookId")["schema"]["type"] == "integer"
    assert param("listReviews", "X-Reviewer")["in"] == "header"
    reviews_filter = param("listReviews", "filter")
    assert (reviews_filter["in"], reviews_filter["style"]) == ("query", "deepObject")
    assert set(_follow("/components/schemas/ReviewFilter")[1]["properties"]) == {"minStars", "since"}
    assert param("getAuthor", "name")["in"] == "path"

    book = _follow("/components/schemas/Book")[1]
    assert book["properties"]["id"] == {"type": "integer", "readOnly": True, "description": "Assigned by the shelf."}
    assert book["properties"]["year"]["type"] == ["integer", "null"]
    assert set(book["required"]) == {"title", "author"}
    assert _schema("/paths/~1books/post/requestBody/content/application~1json", "schema") == book

    cover = _schema("/paths/~1books~1{bookId}~1cover/put/requestBody/content/multipart~1form-data", "schema")
    assert cover["properties"]["file"]["contentMediaType"] == "image/png"
    assert cover["properties"]["caption"]["type"] == "string"
    review_form = _schema(
        "/paths/~1books~1{bookId}~1reviews/post/requestBody/content/application~1x-www-form-urlencoded", "schema"
    )
    assert review_form["required"] == ["stars"]
    assert (review_form["properties"]["stars"]["minimum"], review_form["properties"]["stars"]["maximum"]) == (1, 5)
    assert "image/png" in SPEC["paths"]["/books/{bookId}/cover"]["get"]["responses"]["200"]["content"]
    assert "text/plain" in SPEC["paths"]["/stats"]["get"]["responses"]["200"]["content"]
    assert {"Book", "Review", "Error"} <= set(SPEC["components"]["schemas"])


def test_spec_path_is_the_packaged_file() -> None:
    path = spec_path()
    assert path.is_file()
    assert path.name == "openapi.yaml"
    packaged = importlib.resources.files("apimcp.demo_api") / "openapi.yaml"
    assert packaged.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


# --- books ---------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_list_books(client: Client) -> None:
    listed = await conform(await client.get("/books"), "listBooks")
    assert listed["total"] == 5
    assert [b["id"] for b in listed["books"]] == [1, 2, 3, 4, 5]
    assert listed["books"][0] == {
        "id": 1,
        "title": "Pride and Prejudice",
        "author": "Jane Austen",
        "year": 1813,
        "tags": ["classic", "romance"],
    }
    assert next(b for b in listed["books"] if b["title"] == "Beowulf")["year"] is None

    async def titles(**params: str) -> tuple[list[str], int]:
        found = await conform(await client.get("/books", params=params), "listBooks")
        return [b["title"] for b in found["books"]], found["total"]

    assert await titles(q="AUSTEN") == (["Pride and Prejudice", "Emma"], 2)
    assert await titles(q="moby") == (["Moby-Dick"], 1)
    assert await titles(q="años") == (["Cien años de soledad"], 1)
    assert await titles(q="no such thing") == ([], 0)
    assert await titles(tags="classic,romance") == (["Pride and Prejudice", "Emma"], 2)
    assert await titles(tags="Classic") == (["Pride and Prejudice", "Emma", "Moby-Dick", "Beowulf"], 4)
    assert await titles(tags="classic", q="austen") == (["Pride and Prejudice", "Emma"], 2)
    assert await titles(tags="") == (["Pride and Prejudice", "Emma", "Moby-Dick", "Cien años de soledad", "Beowulf"], 5)
    assert await titles(limit="2") == (["Pride and Prejudice", "Emma"], 5)
    assert await titles(limit="2", offset="2") == (["Moby-Dick", "Cien años de soledad"], 5)
    assert await titles(offset="10") == ([], 5)
    # the comma of `tags=a,b` may arrive percent-encoded
    raw = await client.get(URL("/books?tags=classic%2Cromance", encoded=True))
    assert (await conform(raw, "listBooks"))["total"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=0", "limit must be at least 1"),
        ("limit=101", "limit must be at most 100"),
        ("limit=ten", "limit must be an integer"),
        ("limit=1.5", "limit must be an integer"),
        ("offset=-1", "offset must be at least 0"),
        ("limit=1&limit=2", "limit is given 2 times"),
        ("page=2", "Unknown query parameter 'page'"),
    ],
)
async def test_list_books_refuses_bad_parameters(client: Client, query: str, message: str) -> None:
    error = await conform(await client.get(f"/books?{query}"), "listBooks")
    assert message in error["message"]


@pytest.mark.anyio
async def test_add_book(client: Client) -> None:
    body = {"id": 99, "title": "  Frankenstein ", "author": "Mary Shelley", "year": 1818, "tags": ["gothic", "gothic"]}
    resp = await client.post("/books", json=body)
    assert resp.status == 201
    added = await conform(resp, "addBook")
    assert added == {"id": 6, "title": "Frankenstein", "author": "Mary Shelley", "year": 1818, "tags": ["gothic"]}
    assert resp.headers["Location"] == "/books/6"
    assert await conform(await client.get("/books/6"), "getBook") == added

    minimal = await conform(await client.post("/books", json={"title": "Untitled", "author": "Nobody"}), "addBook")
    assert minimal == {"id": 7, "title": "Untitled", "author": "Nobody", "year": None, "tags": []}
    whole = await conform(await client.post("/books", json={"title": "T", "author": "A", "year": 2e3}), "addBook")
    assert whole["year"] == 2000


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        ('{"author": "A"}', "application/json", "title is required"),
        ('{"title": "T"}', "application/json", "author is required"),
        ('{"title": " ", "author": "A"}', "application/json", "title must not be empty"),
        ('{"title": 5, "author": "A"}', "application/json", "title must be a string"),
        ('{"title": "' + "x" * 201 + '", "author": "A"}', "application/json", "title is longer than 200"),
        ('{"title": "T", "author": "A", "year": "1818"}', "application/json", "year must be an integer or null"),
        ('{"title": "T", "author": "A", "year": true}', "application/json", "year must be an integer or null"),
        ('{"title": "T", "author": "A", "year": 18.5}', "application/json", "year must be an integer or null"),
        ('{"title": "T", "author": "A", "tags": "gothic"}', "application/json", "tags must be an array"),
        ('{"title": "T", "author": "A", "tags": ["a,b"]}', "application/json", "contains a comma"),
        ('{"title": "T", "author": "A", "tags": [1]}', "application/json", "each tag must be a string"),
        ('{"title": "T", "author": "A", "pages": 3}', "application/json", "Unknown field 'pages'"),
        ('{"title": "T", "author": "A", "year": NaN}', "application/json", "not valid JSON"),
        ("{not json", "application/json", "not valid JSON"),
        ('["T", "A"]', "application/json", "must be a JSON object"),
        ('{"title": "T", "author": "A"}', "text/plain", "Content-Type: application/json"),
    ],
)
async def test_add_book_refuses_bad_input(client: Client, body: str, content_type: str, message: str) -> None:
    resp = await client.post("/books", data=body, headers={"Content-Type": content_type})
    assert resp.status == 400
    assert message in (await conform(resp, "addBook"))["message"]
    assert (await conform(await client.get("/books"), "listBooks"))["total"] == 5


@pytest.mark.anyio
async def test_get_book(client: Client) -> None:
    book = await conform(await client.get("/books/4"), "getBook")
    assert book == {
        "id": 4,
        "title": "Cien años de soledad",
        "author": "Gabriel García Márquez",
        "year": 1967,
        "tags": ["magical-realism"],
    }
    missing = await client.get("/books/999")
    assert missing.status == 404
    assert await conform(missing, "getBook") == {"message": "No book with id 999"}
    huge = await client.get("/books/" + "9" * 40)
    assert huge.status == 404
    assert (await conform(huge, "getBook"))["message"].startswith("No book with id 999")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("book_id", "message"),
    [
        ("abc", "must be an integer"),
        ("1.5", "must be an integer"),
        ("0", "at least 1"),
        ("-3", "at least 1"),
        ("9" * 5000, "must be an integer"),
    ],
)
async def test_book_ids_must_be_positive_integers(client: Client, book_id: str, message: str) -> None:
    for operation_id, method, suffix in [
        ("getBook", "GET", ""),
        ("deleteBook", "DELETE", ""),
        ("getCover", "GET", "/cover"),
        ("listReviews", "GET", "/reviews"),
    ]:
        resp = await client.request(method, f"/books/{book_id}{suffix}")
        assert resp.status == 400
        assert message in (await conform(resp, operation_id))["message"]


@pytest.mark.anyio
async def test_update_book(client: Client) -> None:
    changed = await conform(await client.patch("/books/2", json={"year": 1816, "tags": ["classic"]}), "updateBook")
    assert changed == {"id": 2, "title": "Emma", "author": "Jane Austen", "year": 1816, "tags": ["classic"]}
    cleared = await conform(await client.patch("/books/2", json={"year": None, "title": "Emma."}), "updateBook")
    assert (cleared["title"], cleared["year"], cleared["tags"]) == ("Emma.", None, ["classic"])
    unchanged = await conform(await client.patch("/books/2", json={}), "updateBook")
    assert unchanged == cleared
    assert await conform(await client.get("/books/2"), "getBook") == cleared

    missing = await client.patch("/books/999", json={"year": 1})
    assert missing.status == 404
    await conform(missing, "updateBook")
    for body, message in [
        ({"id": 5}, "Unknown field 'id'"),
        ({"title": None}, "title must be a string"),
        ({"author": ""}, "author must not be empty"),
        ({"year": "soon"}, "year must be an integer or null"),
        ({"colour": "red"}, "Unknown field 'colour'"),
    ]:
        resp = await client.patch("/books/2", json=body)
        assert resp.status == 400
        assert message in (await conform(resp, "updateBook"))["message"]
    assert await conform(await client.get("/books/2"), "getBook") == cleared


@pytest.mark.anyio
async def test_delete_book(client: Client) -> None:
    resp = await client.delete("/books/1")
    assert resp.status == 204
    assert await conform(resp, "deleteBook") is None
    for operation_id, path in [
        ("getBook", "/books/1"),
        ("getCover", "/books/1/cover"),
        ("listReviews", "/books/1/reviews"),
    ]:
        gone = await client.get(path)
        assert gone.status == 404
        await conform(gone, operation_id)
    again = await client.delete("/books/1")
    assert again.status == 404
    await conform(again, "deleteBook")
    assert await conform(await client.get("/stats"), "getStats") == "4 books, 4 authors, 1 review, 0 covers"


# --- covers --------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_seeded_cover_is_a_valid_png(client: Client) -> None:
    resp = await client.get("/books/1/cover")
    assert resp.status == 200
    png = await conform(resp, "getCover")
    chunks = _png_chunks(png)
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour_type, _, _, _ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour_type) == (8, 2)
    pixels = zlib.decompress(chunks[1][1])
    assert len(pixels) == height * (1 + 3 * width)
    assert unquote(resp.headers["X-Cover-Caption"]) == "First edition, 1813"

    none = await client.get("/books/2/cover")
    assert none.status == 404
    assert await conform(none, "getCover") == {"message": "Book 2 has no cover"}


@pytest.mark.anyio
async def test_upload_cover(client: Client) -> None:
    png = _tiny_png()
    resp = await client.put("/books/4/cover", data=_cover_form(png, "Première édition, 100% papier"))
    assert resp.status == 204
    assert await conform(resp, "uploadCover") is None
    got = await client.get("/books/4/cover")
    assert await conform(got, "getCover") == png
    assert got.headers["X-Cover-Caption"].isascii()
    assert unquote(got.headers["X-Cover-Caption"]) == "Première édition, 100% papier"

    replaced = await client.put("/books/4/cover", data=_cover_form(png + b""))
    assert replaced.status == 204
    again = await client.get("/books/4/cover")
    assert "X-Cover-Caption" not in again.headers
    assert await conform(again, "getCover") == png
    # a file part without a filename still counts when it says it is an image
    bare = aiohttp.MultipartWriter("form-data")
    bare.append(png, {"Content-Type": "image/png"}).set_content_disposition("form-data", name="file")
    assert (await client.put("/books/5/cover", data=bare)).status == 204
    assert await conform(await client.get("/stats"), "getStats") == "5 books, 4 authors, 3 reviews, 3 covers"


@pytest.mark.anyio
async def test_upload_cover_refuses_bad_input(client: Client) -> None:
    png = _tiny_png()
    cases: list[tuple[Any, int, str]] = [
        (_cover_form(b"GIF89a not a png"), 400, "must be a PNG"),
        (_cover_form(png, "x" * 201), 400, "caption is longer than 200"),
        (_cover_form(png, name="image"), 400, "Unknown form field 'image'"),
        (_cover_form(png + b"\x00" * (1024 * 1024)), 413, "larger than"),
        (aiohttp.FormData({"caption": "no file"}), 400, "'file' part"),
        ({"file": "abc"}, 400, "multipart/form-data"),
    ]
    for data, status, message in cases:
        resp = await client.put("/books/2/cover", data=data)
        assert resp.status == status, message
        assert message in (await conform(resp, "uploadCover"))["message"]
    untyped = (
        b'--xyz\r\nContent-Disposition: form-data; name="file"\r\n\r\n' + png + b"\r\n--xyz--\r\n"
    )  # no filename and no Content-Type: a text field, and a PNG is not UTF-8
    resp = await client.put(
        "/books/2/cover", data=untyped, headers={"Content-Type": "multipart/form-data; boundary=xyz"}
    )
    assert resp.status == 400
    assert "Content-Type: image/png" in (await conform(resp, "uploadCover"))["message"]
    twice = _cover_form(png)
    twice.add_field("file", io.BytesIO(png), filename="b.png", content_type="image/png")
    resp = await client.put("/books/2/cover", data=twice)
    assert resp.status == 400
    assert "file is given 2 times" in (await conform(resp, "uploadCover"))["message"]
    too_big = await client.put("/books/2/cover", data=_cover_form(b"\x00" * (3 * 1024 * 1024)))
    assert too_big.status == 413
    await conform(too_big, "uploadCover")
    missing = await client.put("/books/999/cover", data=_cover_form(png))
    assert missing.status == 404
    await conform(missing, "uploadCover")
    assert (await client.get("/books/2/cover")).status == 404


# --- reviews -------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_list_reviews(client: Client) -> None:
    async def reviewers(book_id: int = 1, headers: dict[str, str] | None = None, **params: str) -> list[str]:
        resp = await client.get(f"/books/{book_id}/reviews", params=params, headers=headers)
        assert resp.status == 200
        return [r["reviewer"] for r in await conform(resp, "listReviews")]

    everything = await conform(await client.get("/books/1/reviews"), "listReviews")
    assert everything[0] == {
        "id": 1,
        "bookId": 1,
        "stars": 3,
        "text": "Lovely prose, slow start.",
        "reviewer": "bob",
        "date": "2023-11-03",
    }
    assert [r["reviewer"] for r in everything] == ["bob", "alice"]
    assert await reviewers(headers={"X-Reviewer": "ALICE"}) == ["alice"]
    assert await reviewers(headers={"X-Reviewer": "zoe"}) == []
    assert await reviewers(**{"filter[minStars]": "4"}) == ["alice"]
    assert await reviewers(**{"filter[since]": "2024-01-01"}) == ["alice"]
    assert await reviewers(**{"filter[since]": "2023-11-03", "filter[minStars]": "3"}) == ["bob", "alice"]
    assert await reviewers(**{"filter[minStars]": "5", "filter[since]": "2024-03-01"}) == []
    assert await reviewers(book_id=3) == ["carol"]
    assert await reviewers(book_id=2) == []
    # deepObject keys usually arrive with their brackets percent-encoded
    encoded = await client.get(URL("/books/1/reviews?filter%5BminStars%5D=4", encoded=True))
    assert [r["reviewer"] for r in await conform(encoded, "listReviews")] == ["alice"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("filter=%7B%22minStars%22%3A4%7D", "filter is a deepObject"),
        ("filter[minStars]=6", "filter[minStars] must be at most 5"),
        ("filter[minStars]=many", "filter[minStars] must be an integer"),
        ("filter[since]=2024-13-01", "filter[since] must be a date"),
        ("filter[since]=yesterday", "filter[since] must be a date"),
        ("filter[stars]=3", "Unknown query parameter 'filter[stars]'"),
    ],
)
async def test_list_reviews_refuses_bad_filters(client: Client, query: str, message: str) -> None:
    resp = await client.get(f"/books/1/reviews?{query}")
    assert resp.status == 400
    assert message in (await conform(resp, "listReviews"))["message"]


@pytest.mark.anyio
async def test_add_review(client: Client) -> None:
    before = datetime.now(UTC).date().isoformat()
    resp = await client.post(
        "/books/2/reviews", data={"stars": "4", "text": "Matchmaking gone wrong."}, headers={"X-Reviewer": "dave"}
    )
    after = datetime.now(UTC).date().isoformat()
    assert resp.status == 201
    review = await conform(resp, "addReview")
    assert review["date"] in {before, after}
    assert review == {
        "id": 4,
        "bookId": 2,
        "stars": 4,
        "text": "Matchmaking gone wrong.",
        "reviewer": "dave",
        "date": review["date"],
    }
    quiet = await conform(await client.post("/books/2/reviews", data={"stars": "2"}), "addReview")
    assert (quiet["reviewer"], quiet["text"], quiet["stars"]) == ("anonymous", "", 2)
    listed = await conform(await client.get("/books/2/reviews", headers={"X-Reviewer": "Dave"}), "listReviews")
    assert listed == [review]


@pytest.mark.anyio
async def test_add_review_refuses_bad_input(client: Client) -> None:
    cases: list[tuple[Any, str]] = [
        ({"text": "no stars"}, "stars is required"),
        ({"stars": "0"}, "stars must be at least 1"),
        ({"stars": "6"}, "stars must be at most 5"),
        ({"stars": "five"}, "stars must be an integer"),
        ({"stars": "5", "title": "x"}, "Unknown form field 'title'"),
        ({"stars": "5", "text": "x" * 2001}, "text is longer than 2000"),
        ("stars=4&stars=5", "stars is given 2 times"),
    ]
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for data, message in cases:
        resp = await client.post("/books/1/reviews", data=data, headers=form if isinstance(data, str) else None)
        assert resp.status == 400
        assert message in (await conform(resp, "addReview"))["message"]
    as_json = await client.post("/books/1/reviews", json={"stars": 5})
    assert as_json.status == 400
    assert "x-www-form-urlencoded" in (await conform(as_json, "addReview"))["message"]
    long_name = await client.post("/books/1/reviews", data={"stars": "5"}, headers={"X-Reviewer": "x" * 101})
    assert long_name.status == 400
    await conform(long_name, "addReview")
    missing = await client.post("/books/999/reviews", data={"stars": "5"})
    assert missing.status == 404
    await conform(missing, "addReview")
    assert len(await conform(await client.get("/books/1/reviews"), "listReviews")) == 2


# --- authors and stats ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_get_author_decodes_the_name(client: Client) -> None:
    name = "Gabriel García Márquez"
    resp = await client.get(URL(f"/authors/{quote(name, safe='')}", encoded=True))
    assert resp.status == 200
    author = await conform(resp, "getAuthor")
    assert author["name"] == name
    assert [b["title"] for b in author["books"]] == ["Cien años de soledad"]

    decomposed = quote(unicodedata.normalize("NFD", "gabriel garcía  MÁRQUEZ"), safe="")
    assert (await conform(await client.get(URL(f"/authors/{decomposed}", encoded=True)), "getAuthor"))["name"] == name
    austen = await conform(await client.get("/authors/jane austen"), "getAuthor")
    assert (austen["name"], [b["title"] for b in austen["books"]]) == ("Jane Austen", ["Pride and Prejudice", "Emma"])

    for missing in ["/authors/Nobody%20At%20All", "/authors/Jane%2FAusten"]:
        resp = await client.get(URL(missing, encoded=True))
        assert resp.status == 404
        assert "No author named" in (await conform(resp, "getAuthor"))["message"]


@pytest.mark.anyio
async def test_stats(client: Client) -> None:
    resp = await client.get("/stats")
    assert resp.content_type == "text/plain"
    assert await conform(resp, "getStats") == "5 books, 4 authors, 3 reviews, 1 cover"
    await client.post("/books", json={"title": "Persuasion", "author": "JANE AUSTEN"})
    assert await conform(await client.get("/stats"), "getStats") == "6 books, 4 authors, 3 reviews, 1 cover"


@pytest.mark.anyio
async def test_an_empty_shelf() -> None:
    async with TestClient(TestServer(create_app(seed=False))) as empty:
        assert await conform(await empty.get("/stats"), "getStats") == "0 books, 0 authors, 0 reviews, 0 covers"
        assert await conform(await empty.get("/books"), "listBooks") == {"books": [], "total": 0}
        first = await conform(await empty.post("/books", json={"title": "Dune", "author": "Frank Herbert"}), "addBook")
        assert first["id"] == 1


@pytest.mark.anyio
async def test_unknown_paths_and_methods_answer_json_errors(client: Client) -> None:
    nowhere = await client.get("/shelves")
    assert nowhere.status == 404
    assert await nowhere.json() == {"message": "Nothing at /shelves"}
    wrong = await client.post("/stats")
    assert wrong.status == 405
    assert wrong.headers["Allow"] == "GET"
    assert (await wrong.json())["message"].startswith("POST is not allowed on /stats")
    extra = await client.get("/stats?verbose=1")
    assert extra.status == 400
    assert "Unknown query parameter 'verbose'" in (await extra.json())["message"]


@pytest.mark.anyio
async def test_start_serves_on_a_free_loopback_port() -> None:
    runner, port = await start()
    try:
        assert port > 0
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/stats") as resp:
            assert resp.status == 200
            assert await resp.text() == "5 books, 4 authors, 3 reviews, 1 cover"
    finally:
        await runner.cleanup()
