"""A real GraphQL server for tests and benchmarks: a small library, executed by graphql-core over aiohttp.

It has what the GraphQL importer and backend must handle: an interface (Node)
with two implementations that refer to each other (Book.author, Author.books),
a union, enums, input objects (one recursive), a described custom scalar, a
mutation, a field that fails, a field that answers partially, and fields that
echo what they were given (for injection tests) or what the request carried
(for credential tests).

Parsed and validated documents are cached by their text, so a repeated call
costs one execution. Start it in tests with `graphql_server()`, or standalone:
`python -m tests.support.graphql_server --port 8765` (endpoint `/graphql`).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    GraphQLSchema,
    build_schema,
    execute,
    parse,
    validate,
)

from tests.support.live_aiohttp import live_aiohttp

SDL = '''
"""A calendar date, written YYYY-MM-DD."""
scalar Date

"""Something with a global identifier."""
interface Node {
  id: ID!
}

"""What a book is about."""
enum Genre {
  FICTION
  SCIENCE
  "Books about the past."
  HISTORY
}

type Author implements Node {
  id: ID!
  name: String!
  born: Date
  "Books this author wrote."
  books: [Book!]!
}

type Book implements Node {
  id: ID!
  title: String!
  genre: Genre!
  published: Date
  pages: Int
  author: Author!
  "Books on the same subject."
  related: [Book!]!
}

union SearchResult = Book | Author

"""Conditions on books; `and` and `or` nest further filters."""
input BookFilter {
  genre: Genre
  titleContains: String
  publishedAfter: Date
  and: [BookFilter!]
  or: [BookFilter!]
}

input NewBook {
  title: String!
  genre: Genre! = FICTION
  authorId: ID!
  published: Date
  tags: [String!]
}

type RequestInfo {
  authorization: String
  apiKeyHeader: String
  apiKeyQuery: String
}

"What a call carried besides credentials: trace context and forwarding headers."
type PassedHeaders {
  traceparent: String
  tracestate: String
  forwarded: String
  forwardedFor: String
  tenant: String
}

type Query {
  "A book by its id."
  book(id: ID!): Book
  author(id: ID!): Author
  "Books matching a filter, at most `limit` of them."
  books(filter: BookFilter, limit: Int! = 10): [Book!]!
  search(text: String!): [SearchResult!]!
  node(id: ID!): Node
  "Gives back the text it was given, exactly."
  echo(text: String!): String!
  "Gives back the texts and the number it was given."
  echoMany(texts: [String!]!, times: Int): [String!]!
  "Always fails: errors and no data."
  failing: String!
  "Books by id; an unknown id is an error at that position and the others still come back."
  booksByIds(ids: [ID!]!): [Book]
  "Sleeps, then answers."
  slow(seconds: Float!): String
  "A long string of x."
  big(size: Int!): String!
  "What the request carried."
  requestInfo: RequestInfo!
  passedHeaders: PassedHeaders!
  oldField: String @deprecated(reason: "Use echo.")
}

type Mutation {
  "Adds a book."
  addBook(input: NewBook!): Book!
  deleteBook(id: ID!): Boolean!
}
'''

AUTHORS: dict[str, dict[str, Any]] = {
    "a1": {"__typename": "Author", "id": "a1", "name": "Ursula K. Le Guin", "born": "1929-10-21"},
    "a2": {"__typename": "Author", "id": "a2", "name": "Carl Sagan", "born": None},
}


def _new_book(book_id: str, title: str, genre: str, published: str | None, pages: int | None, author: str) -> Any:
    return {"__typename": "Book", "id": book_id, "title": title, "genre": genre, "published": published,
            "pages": pages, "authorId": author}  # fmt: skip


BOOKS: dict[str, dict[str, Any]] = {
    "b1": _new_book("b1", "The Dispossessed", "FICTION", "1974-05-01", 387, "a1"),
    "b2": _new_book("b2", "Cosmos", "SCIENCE", "1980-01-01", None, "a2"),
    "b3": _new_book("b3", "The Left Hand of Darkness", "FICTION", "1969-03-01", 286, "a1"),
}
MAX_CACHED_DOCUMENTS = 512


class Library:
    """The server's data; each server has its own, so mutations in one test do not leak into another."""

    def __init__(self) -> None:
        self.authors = {key: dict(value) for key, value in AUTHORS.items()}
        self.books = {key: dict(value) for key, value in BOOKS.items()}

    def matches(self, book: dict[str, Any], f: dict[str, Any] | None) -> bool:
        if not f:
            return True
        if f.get("genre") is not None and book["genre"] != f["genre"]:
            return False
        if f.get("titleContains") is not None and f["titleContains"].lower() not in book["title"].lower():
            return False
        if f.get("publishedAfter") is not None and (book["published"] or "") <= f["publishedAfter"]:
            return False
        if f.get("and") is not None and not all(self.matches(book, part) for part in f["and"]):
            return False
        return f.get("or") is None or any(self.matches(book, part) for part in f["or"])


def make_schema() -> GraphQLSchema:
    schema = build_schema(SDL)

    def resolver(type_name: str, field_name: str):  # type: ignore[no-untyped-def]
        def register(function: Any) -> Any:
            schema.get_type(type_name).fields[field_name].resolve = function  # type: ignore[union-attr]
            return function

        return register

    def lib(info: Any) -> Library:
        library: Library = info.context["library"]
        return library

    @resolver("Query", "book")
    def _book(_: Any, info: Any, id: str) -> Any:
        return lib(info).books.get(id)

    @resolver("Query", "author")
    def _author(_: Any, info: Any, id: str) -> Any:
        return lib(info).authors.get(id)

    @resolver("Query", "node")
    def _node(_: Any, info: Any, id: str) -> Any:
        return lib(info).books.get(id) or lib(info).authors.get(id)

    @resolver("Query", "books")
    def _books(_: Any, info: Any, limit: int, filter: dict[str, Any] | None = None) -> Any:
        return [b for b in lib(info).books.values() if lib(info).matches(b, filter)][:limit]

    @resolver("Query", "search")
    def _search(_: Any, info: Any, text: str) -> Any:
        needle = text.lower()
        found = [b for b in lib(info).books.values() if needle in b["title"].lower()]
        return found + [a for a in lib(info).authors.values() if needle in a["name"].lower()]

    @resolver("Query", "echo")
    def _echo(_: Any, info: Any, text: str) -> str:
        return text

    @resolver("Query", "echoMany")
    def _echo_many(_: Any, info: Any, texts: list[str], times: int | None = None) -> list[str]:
        return texts * (times if times is not None else 1)

    @resolver("Query", "failing")
    def _failing(_: Any, info: Any) -> str:
        raise GraphQLError("the failing field failed, as it always does")

    @resolver("Query", "booksByIds")
    def _books_by_ids(_: Any, info: Any, ids: list[str]) -> list[Any]:
        def one(book_id: str) -> Any:
            if book_id not in lib(info).books:
                return GraphQLError(f"no book {book_id!r}")  # graphql-core reports a returned error at its path
            return lib(info).books[book_id]

        return [one(book_id) for book_id in ids]

    @resolver("Query", "slow")
    async def _slow(_: Any, info: Any, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @resolver("Query", "big")
    def _big(_: Any, info: Any, size: int) -> str:
        return "x" * size

    @resolver("Query", "requestInfo")
    def _request_info(_: Any, info: Any) -> dict[str, Any]:
        request: web.Request = info.context["request"]
        return {
            "authorization": request.headers.get("Authorization"),
            "apiKeyHeader": request.headers.get("X-Api-Key"),
            "apiKeyQuery": request.query.get("api_key"),
        }

    @resolver("Query", "passedHeaders")
    def _passed_headers(_: Any, info: Any) -> dict[str, Any]:
        headers = info.context["request"].headers
        return {
            "traceparent": headers.get("traceparent"),
            "tracestate": headers.get("tracestate"),
            "forwarded": headers.get("Forwarded"),
            "forwardedFor": headers.get("X-Forwarded-For"),
            "tenant": headers.get("X-Tenant"),
        }

    @resolver("Author", "books")
    def _author_books(author: dict[str, Any], info: Any) -> Any:
        return [b for b in lib(info).books.values() if b["authorId"] == author["id"]]

    @resolver("Book", "author")
    def _book_author(book: dict[str, Any], info: Any) -> Any:
        return lib(info).authors[book["authorId"]]

    @resolver("Book", "related")
    def _related(book: dict[str, Any], info: Any) -> Any:
        return [b for b in lib(info).books.values() if b["genre"] == book["genre"] and b["id"] != book["id"]]

    @resolver("Mutation", "addBook")
    def _add_book(_: Any, info: Any, input: dict[str, Any]) -> Any:
        library = lib(info)
        if input["authorId"] not in library.authors:
            raise GraphQLError(f"no author {input['authorId']!r}")
        book_id = f"b{len(library.books) + 1}"
        book = _new_book(book_id, input["title"], input["genre"], input.get("published"), None, input["authorId"])
        library.books[book_id] = book
        return book

    @resolver("Mutation", "deleteBook")
    def _delete_book(_: Any, info: Any, id: str) -> bool:
        return lib(info).books.pop(id, None) is not None

    return schema


def make_app() -> web.Application:
    schema = make_schema()
    library = Library()
    documents: dict[str, DocumentNode | list[GraphQLError]] = {}

    def prepare(query: str) -> DocumentNode | list[GraphQLError]:
        known = documents.get(query)
        if known is None:
            try:
                document = parse(query)
            except GraphQLError as exc:
                known = [exc]
            else:
                errors = validate(schema, document)
                known = errors or document
            if len(documents) >= MAX_CACHED_DOCUMENTS:
                documents.clear()
            documents[query] = known
        return known

    async def graphql_endpoint(request: web.Request) -> web.Response:
        media_type = (
            "application/graphql-response+json"
            if "application/graphql-response+json" in request.headers.get("Accept", "")
            else "application/json"
        )

        def answer(value: dict[str, Any], status: int = 200) -> web.Response:
            return web.Response(body=orjson.dumps(value), status=status, content_type=media_type)

        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return web.Response(text="the body must be JSON", status=400)
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str):
            return answer({"errors": [{"message": "the request has no query"}]}, 400)
        prepared = prepare(query)
        if isinstance(prepared, list):
            return answer({"errors": [error.formatted for error in prepared]}, 400)
        result = execute(
            schema,
            prepared,
            variable_values=body.get("variables"),
            operation_name=body.get("operationName"),
            context_value={"request": request, "library": library},
        )
        if inspect.isawaitable(result):
            result = await result
        assert isinstance(result, ExecutionResult)
        value: dict[str, Any] = {}
        if result.errors:
            value["errors"] = [error.formatted for error in result.errors]
        # Variables that do not fit the document stop the request before execution: a client error, no data.
        refused = result.data is None and bool(result.errors) and all(e.path is None for e in result.errors or ())
        if not refused:
            value["data"] = result.data
        return answer(value, 400 if refused else 200)

    async def status_endpoint(request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        return web.Response(text=f"status {code} from the test server", status=code)

    app = web.Application()
    app.router.add_post("/graphql", graphql_endpoint)
    app.router.add_route("*", "/status/{code}", status_endpoint)
    return app


def guarded_app(token: str) -> web.Application:
    """The library API answering only requests that carry `Authorization: Bearer <token>` (introspection too)."""

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return web.json_response({"errors": [{"message": "who are you?"}]}, status=401)
        return await handler(request)

    app = make_app()
    app.middlewares.append(require_token)
    return app


@contextmanager
def graphql_server() -> Iterator[str]:
    """Yield the endpoint URL (http://127.0.0.1:PORT/graphql) while a fresh server runs."""
    with live_aiohttp(make_app) as base:
        yield f"{base}/graphql"


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the test library GraphQL API at /graphql.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--host", default="127.0.0.1")
    options = parser.parse_args()
    web.run_app(make_app(), host=options.host, port=options.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
