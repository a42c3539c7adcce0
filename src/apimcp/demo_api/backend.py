"""The Bookshelf API of `openapi.yaml`, kept in memory (aiohttp).

Every operation of the description has exactly one route here, and every error is a JSON
`{"message": ...}` object: 400 for invalid input, 404 for a missing book, author, cover or path,
405 for a method a path does not have, 413 for an oversized body.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
import unicodedata
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import MultiMapping

DEFAULT_PORT = 8780  # the port of the description's `servers` entry; `start()` picks a free one by default
MAX_COVER_BYTES = 1024 * 1024
MAX_TITLE = 200
MAX_AUTHOR = 100
MAX_TAG = 40
MAX_CAPTION = 200
MAX_REVIEW_TEXT = 2000
MAX_REVIEWER = 100
MAX_LIMIT = 100
DEFAULT_LIMIT = 20

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

_INTEGER = re.compile(r"-?[0-9]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# Printable ASCII except "%": left as is in the X-Cover-Caption header, everything else is percent-encoded.
_CAPTION_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")
_dumps = partial(json.dumps, ensure_ascii=False)

_T = TypeVar("_T")


def spec_path() -> Path:
    """The path of the API's OpenAPI description, `openapi.yaml`, shipped next to this module."""
    return Path(__file__).with_name("openapi.yaml")


def create_app(seed: bool = True) -> web.Application:
    """The Bookshelf API as an aiohttp application; `seed` puts a few classics on the shelf."""
    shelf = _Shelf()
    if seed:
        shelf.seed()
    app = web.Application(middlewares=[_json_errors], client_max_size=2 * MAX_COVER_BYTES)
    routes = (
        ("GET", "/books", shelf.list_books),
        ("POST", "/books", shelf.add_book),
        ("GET", "/books/{bookId}", shelf.get_book),
        ("PATCH", "/books/{bookId}", shelf.update_book),
        ("DELETE", "/books/{bookId}", shelf.delete_book),
        ("PUT", "/books/{bookId}/cover", shelf.upload_cover),
        ("GET", "/books/{bookId}/cover", shelf.get_cover),
        ("GET", "/books/{bookId}/reviews", shelf.list_reviews),
        ("POST", "/books/{bookId}/reviews", shelf.add_review),
        ("GET", "/authors/{name}", shelf.get_author),
        ("GET", "/stats", shelf.get_stats),
    )
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    app.router.add_get("/openapi.yaml", _description)
    return app


async def _description(_: web.Request) -> web.Response:
    """The API's own OpenAPI description, so that it can be imported by URL."""
    return web.Response(body=spec_path().read_bytes(), content_type="application/yaml")


async def start(host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, int]:
    """Serve a seeded Bookshelf on `host`:`port` (0: a free port); returns the runner and the bound port.

    Stop it with `await runner.cleanup()`.
    """
    runner = web.AppRunner(create_app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound = int(runner.addresses[0][1])
    except BaseException:
        await runner.cleanup()
        raise
    return runner, bound


def make_png(width: int, height: int, pixel: Mapping[tuple[int, int], tuple[int, int, int]] | None = None) -> bytes:
    """A valid 8-bit RGB PNG; `pixel` maps (x, y) to a colour, white elsewhere."""
    colours = pixel or {}
    rows = (
        b"\x00" + b"".join(bytes(colours.get((x, y), (255, 255, 255))) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _seed_cover() -> bytes:
    """An 8x12 cover: deep red with a gold band across the middle."""
    red, gold = (128, 20, 30), (212, 175, 55)
    return make_png(8, 12, {(x, y): gold if y in (5, 6) else red for x in range(8) for y in range(12)})


# --- the shelf ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Book:
    id: int
    title: str
    author: str
    year: int | None
    tags: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "author": self.author, "year": self.year, "tags": list(self.tags)}


@dataclass(frozen=True, slots=True)
class _Review:
    id: int
    book_id: int
    stars: int
    text: str
    reviewer: str
    day: date

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "bookId": self.book_id,
            "stars": self.stars,
            "text": self.text,
            "reviewer": self.reviewer,
            "date": self.day.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class _Cover:
    png: bytes
    caption: str | None


class _Shelf:
    def __init__(self) -> None:
        self._book_ids = itertools.count(1)
        self._review_ids = itertools.count(1)
        self._books: dict[int, _Book] = {}
        self._covers: dict[int, _Cover] = {}
        self._reviews: list[_Review] = []

    def seed(self) -> None:
        pride = self._add("Pride and Prejudice", "Jane Austen", 1813, ["classic", "romance"])
        self._add("Emma", "Jane Austen", 1815, ["classic", "romance", "comedy"])
        moby = self._add("Moby-Dick", "Herman Melville", 1851, ["classic", "adventure"])
        self._add("Cien años de soledad", "Gabriel García Márquez", 1967, ["magical-realism"])
        self._add("Beowulf", "Anonymous", None, ["classic", "epic", "poetry"])
        self._covers[pride.id] = _Cover(_seed_cover(), "First edition, 1813")
        self._review(pride.id, 3, "Lovely prose, slow start.", "bob", date(2023, 11, 3))
        self._review(pride.id, 5, "Witty and warm; Elizabeth Bennet is a delight.", "alice", date(2024, 2, 14))
        self._review(moby.id, 4, "Long, strange and unforgettable.", "carol", date(2024, 6, 21))

    def _add(self, title: str, author: str, year: int | None, tags: list[str]) -> _Book:
        book = _Book(next(self._book_ids), title, author, year, tags)
        self._books[book.id] = book
        return book

    def _review(self, book_id: int, stars: int, text: str, reviewer: str, day: date) -> _Review:
        review = _Review(next(self._review_ids), book_id, stars, text, reviewer, day)
        self._reviews.append(review)
        return review

    def _book(self, request: web.Request) -> _Book:
        book_id = _integer_text(request.match_info["bookId"], "bookId", minimum=1)
        book = self._books.get(book_id)
        if book is None:
            raise _Invalid(404, f"No book with id {book_id}")
        return book

    # --- books --------------------------------------------------------------------------------------------

    async def list_books(self, request: web.Request) -> web.Response:
        query = _query(request, {"q", "tags", "limit", "offset"})
        needle = _fold(_single(query, "q") or "")
        wanted = [_fold(t) for raw in query.getall("tags", []) for t in raw.split(",") if t.strip()]
        limit = _integer_param(query, "limit", DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
        offset = _integer_param(query, "offset", 0, minimum=0)
        found = [
            book
            for book in self._books.values()
            if (needle in _fold(book.title) or needle in _fold(book.author))
            and all(tag in {_fold(t) for t in book.tags} for tag in wanted)
        ]
        page = found[offset : offset + limit]
        return _json({"books": [b.as_json() for b in page], "total": len(found)})

    async def add_book(self, request: web.Request) -> web.Response:
        _query(request, set())
        fields = _book_fields(await _json_object(request), partial=False)
        book = self._add(fields["title"], fields["author"], fields.get("year"), fields.get("tags", []))
        return _json(book.as_json(), status=201, headers={"Location": f"/books/{book.id}"})

    async def get_book(self, request: web.Request) -> web.Response:
        _query(request, set())
        return _json(self._book(request).as_json())

    async def update_book(self, request: web.Request) -> web.Response:
        _query(request, set())
        book = self._book(request)
        fields = _book_fields(await _json_object(request), partial=True)
        for name, value in fields.items():
            setattr(book, name, value)
        return _json(book.as_json())

    async def delete_book(self, request: web.Request) -> web.Response:
        _query(request, set())
        book = self._book(request)
        del self._books[book.id]
        self._covers.pop(book.id, None)
        self._reviews = [r for r in self._reviews if r.book_id != book.id]
        return web.Response(status=204)

    # --- covers -------------------------------------------------------------------------------------------

    async def upload_cover(self, request: web.Request) -> web.Response:
        _query(request, set())
        book = self._book(request)
        if request.content_type != "multipart/form-data":
            _fail("Send the cover as multipart/form-data, with a 'file' part (and an optional 'caption')")
        try:
            form = await request.post()
        except UnicodeDecodeError:
            _fail("A text part is not UTF-8; send the 'file' part with a filename or Content-Type: image/png")
        except ValueError as error:
            raise _Invalid(400, f"The multipart body cannot be read: {error}") from None
        try:
            _only(form.keys(), {"file", "caption"}, "form field")
            png = _png_part(_single(form, "file"))
            caption = _caption_part(_single(form, "caption"))
        finally:
            for value in form.values():
                if isinstance(value, web.FileField):
                    value.file.close()
        self._covers[book.id] = _Cover(png, caption)
        return web.Response(status=204)

    async def get_cover(self, request: web.Request) -> web.Response:
        _query(request, set())
        book = self._book(request)
        cover = self._covers.get(book.id)
        if cover is None:
            raise _Invalid(404, f"Book {book.id} has no cover")
        headers = {} if cover.caption is None else {"X-Cover-Caption": quote(cover.caption, safe=_CAPTION_SAFE)}
        return web.Response(body=cover.png, content_type="image/png", headers=headers)

    # --- reviews ------------------------------------------------------------------------------------------

    async def list_reviews(self, request: web.Request) -> web.Response:
        query = _query(
            request,
            {"filter[minStars]", "filter[since]"},
            hint="filter is a deepObject: send filter[minStars]=4&filter[since]=2024-01-01",
        )
        book = self._book(request)
        min_stars = _integer_param(query, "filter[minStars]", 1, minimum=1, maximum=5)
        since_text = _single(query, "filter[since]")
        since = _date(since_text, "filter[since]") if since_text is not None else date.min
        reviewer = request.headers.get("X-Reviewer", "").strip()
        found = sorted(
            (
                r
                for r in self._reviews
                if r.book_id == book.id
                and r.stars >= min_stars
                and r.day >= since
                and (not reviewer or _fold(r.reviewer) == _fold(reviewer))
            ),
            key=lambda r: (r.day, r.id),
        )
        return _json([r.as_json() for r in found])

    async def add_review(self, request: web.Request) -> web.Response:
        _query(request, set())
        book = self._book(request)
        if request.content_type != "application/x-www-form-urlencoded":
            _fail("Send the review as application/x-www-form-urlencoded, e.g. stars=5&text=Great")
        try:
            form = await request.post()
        except ValueError as error:
            raise _Invalid(400, f"The form cannot be read: {error}") from None
        _only(form.keys(), {"stars", "text"}, "form field")
        stars_text = _single(form, "stars")
        if stars_text is None:
            _fail("stars is required (an integer from 1 to 5)")
        stars = _integer_text(str(stars_text), "stars", minimum=1, maximum=5)
        text = str(_single(form, "text") or "").strip()
        if len(text) > MAX_REVIEW_TEXT:
            _fail(f"text is longer than {MAX_REVIEW_TEXT} characters")
        reviewer = request.headers.get("X-Reviewer", "").strip() or "anonymous"
        if len(reviewer) > MAX_REVIEWER:
            _fail(f"X-Reviewer is longer than {MAX_REVIEWER} characters")
        review = self._review(book.id, stars, text, reviewer, datetime.now(UTC).date())
        return _json(review.as_json(), status=201)

    # --- authors and stats --------------------------------------------------------------------------------

    async def get_author(self, request: web.Request) -> web.Response:
        _query(request, set())
        # aiohttp has already percent-decoded the path segment (UTF-8), so "Garc%C3%ADa" arrives as "García".
        name = request.match_info["name"]
        books = [b for b in self._books.values() if _fold(b.author) == _fold(name)]
        if not books:
            raise _Invalid(404, f"No author named {name!r} on the shelf")
        return _json({"name": books[0].author, "books": [b.as_json() for b in books]})

    async def get_stats(self, request: web.Request) -> web.Response:
        _query(request, set())
        authors = {_fold(b.author) for b in self._books.values()}
        parts = (
            _count(len(self._books), "book"),
            _count(len(authors), "author"),
            _count(len(self._reviews), "review"),
            _count(len(self._covers), "cover"),
        )
        return web.Response(text=", ".join(parts), content_type="text/plain")


# --- input checks -------------------------------------------------------------------------------------------


class _Invalid(Exception):
    """Ends a request with a JSON error object."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _fail(message: str) -> NoReturn:
    raise _Invalid(400, message)


def _query(request: web.Request, allowed: set[str], hint: str = "") -> MultiMapping[str]:
    """The query string, refused when it carries a parameter the operation does not have."""
    for name in request.query:
        if name not in allowed:
            expected = ", ".join(sorted(allowed)) or "none"
            _fail(f"Unknown query parameter {name!r} (expected: {expected}){'; ' + hint if hint else ''}")
    return request.query


def _only(names: Iterable[str], allowed: set[str], what: str) -> None:
    for name in names:
        if name not in allowed:
            _fail(f"Unknown {what} {name!r} (expected: {', '.join(sorted(allowed))})")


def _single(values: MultiMapping[_T], name: str) -> _T | None:
    found = values.getall(name, [])
    if len(found) > 1:
        _fail(f"{name} is given {len(found)} times; give it once")
    return found[0] if found else None


def _integer_text(text: str, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    try:
        value = int(text) if _INTEGER.fullmatch(text) else None
    except ValueError:  # more digits than Python converts
        value = None
    if value is None:
        _fail(f"{name} must be an integer, not {text[:40]!r}")
    return _in_range(value, name, minimum, maximum)


def _in_range(value: int, name: str, minimum: int | None, maximum: int | None) -> int:
    if minimum is not None and value < minimum:
        _fail(f"{name} must be at least {minimum}, not {value}")
    if maximum is not None and value > maximum:
        _fail(f"{name} must be at most {maximum}, not {value}")
    return value


def _integer_param(
    query: MultiMapping[str], name: str, default: int, *, minimum: int, maximum: int | None = None
) -> int:
    text = _single(query, name)
    return default if text is None else _integer_text(text, name, minimum=minimum, maximum=maximum)


def _date(text: str, name: str) -> date:
    try:
        if _DATE.fullmatch(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    _fail(f"{name} must be a date written YYYY-MM-DD, not {text[:40]!r}")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


async def _json_object(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        _fail("Send a JSON object with Content-Type: application/json")
    raw = await request.read()
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        _fail("The body is not valid JSON")
    if not isinstance(value, dict):
        _fail("The body must be a JSON object")
    return value


def _book_fields(body: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """The checked fields of a new book (`partial`: of a change); `id` is read-only and ignored when adding."""
    _only(body, {"title", "author", "year", "tags"} | (set() if partial else {"id"}), "field")
    fields: dict[str, Any] = {}
    for name, longest in (("title", MAX_TITLE), ("author", MAX_AUTHOR)):
        if name in body:
            fields[name] = _text(body[name], name, longest)
        elif not partial:
            _fail(f"{name} is required")
    if "year" in body:
        fields["year"] = None if body["year"] is None else _json_integer(body["year"], "year")
    if "tags" in body:
        fields["tags"] = _tags(body["tags"])
    return fields


def _text(value: object, name: str, longest: int) -> str:
    if not isinstance(value, str):
        _fail(f"{name} must be a string")
    text = value.strip()
    if not text:
        _fail(f"{name} must not be empty")
    if len(text) > longest:
        _fail(f"{name} is longer than {longest} characters")
    return text


def _json_integer(value: object, name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(f"{name} must be an integer or null")
    return value


def _tags(value: object) -> list[str]:
    if not isinstance(value, list):
        _fail("tags must be an array of strings")
    tags: list[str] = []
    for item in value:
        tag = _text(item, "each tag", MAX_TAG)
        if "," in tag:
            _fail(f"tag {tag!r} contains a comma")
        if tag not in tags:
            tags.append(tag)
    return tags


def _png_part(value: str | bytes | bytearray | web.FileField | None) -> bytes:
    if value is None:
        _fail("The 'file' part (the PNG cover) is required")
    if isinstance(value, str):
        _fail("The 'file' part must be binary: give it a filename or Content-Type: image/png")
    data = value.file.read(MAX_COVER_BYTES + 1) if isinstance(value, web.FileField) else bytes(value)
    if len(data) > MAX_COVER_BYTES:
        raise _Invalid(413, f"The cover is larger than {MAX_COVER_BYTES} bytes")
    if not (data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR"):
        _fail("The cover must be a PNG image")
    return data


def _caption_part(value: str | bytes | bytearray | web.FileField | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, web.FileField):
        _fail("The 'caption' part must be text, not a file")
    try:
        caption = value if isinstance(value, str) else bytes(value).decode()
    except UnicodeDecodeError:
        _fail("The 'caption' part must be UTF-8 text")
    caption = caption.strip()
    if len(caption) > MAX_CAPTION:
        _fail(f"caption is longer than {MAX_CAPTION} characters")
    return caption or None


# --- responses ----------------------------------------------------------------------------------------------


def _fold(text: str) -> str:
    """For case- and accent-form-insensitive matching ("GARCÍA" matches a decomposed "García")."""
    return unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", text).casefold().split()))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _json(value: object, *, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(value, status=status, headers=headers, dumps=_dumps)


@web.middleware
async def _json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as a JSON `{"message": ...}`, including aiohttp's own 404, 405 and 413."""
    try:
        return await handler(request)
    except _Invalid as error:
        return _json({"message": error.message}, status=error.status)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        headers: dict[str, str] = {}
        if error.status == 404:
            message = f"Nothing at {request.path}"
        elif error.status == 405:
            headers["Allow"] = error.headers.get("Allow", "")
            message = f"{request.method} is not allowed on {request.path} (allowed: {headers['Allow']})"
        else:
            message = error.text or error.reason
        return _json({"message": message}, status=error.status, headers=headers)
