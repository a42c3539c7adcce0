"""Reading a GraphQL schema: SDL text, introspection JSON, or the answer of a live endpoint.

Real schemas are not always valid by graphql-core's rules (GitHub's defines two
fields twice and deprecates fields its interfaces do not). A few such harmless
faults are tolerated, named in TOLERATED_*; anything else is refused with the
validator's messages and where they point.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from graphql import (
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    build_ast_schema,
    build_client_schema,
    get_introspection_query,
    parse,
    validate_schema,
)
from graphql.validation.validate import validate_sdl

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import fetch_error, is_url
from apimcp.safety.fetch import REDIRECT_STATUSES, Fetcher, FetchError
from apimcp.safety.yaml_loading import DEFAULT_MAX_DEPTH, JsonTooDeep, check_depth

TOLERATED_SDL_ERRORS = (re.compile(r"^Field '[^']+' can only be defined once\.$"),)
"""A field defined twice in one type: the schema stays usable (the last definition counts)."""
TOLERATED_SCHEMA_ERRORS = (re.compile(r"^Interface field \S+ is not deprecated, so implementation field \S+ must not"),)
"""An implementation deprecating a field its interface does not: a documentation matter only."""
MAX_REPORTED_ERRORS = 5
_ACCEPT = "application/graphql-response+json, application/json"
MAX_JSON_DEPTH = DEFAULT_MAX_DEPTH
"""Introspection results nest type references (`ofType`) a few levels deep; deeper is refused before graphql-core
recurses into it."""

_SDL_START = re.compile(
    rb"^[ \t]*(?:extend[ \t]+)?(?:schema[ \t\r\n]*\{|type[ \t]+[_A-Za-z][_0-9A-Za-z]*[ \t\r\n]*(?:\{|implements\b|@))",
    re.MULTILINE,
)


def looks_like_graphql(content: bytes) -> bool:
    """Whether `content` is GraphQL SDL or an introspection result (a cheap check, without parsing SDL)."""
    text = content.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"{":
        try:
            document = _json(text)
        except (orjson.JSONDecodeError, JsonTooDeep):
            return False
        return _introspection_of(document) is not None
    return _SDL_START.search(text) is not None


def schema_from_bytes(content: bytes, source: str) -> GraphQLSchema:
    """The schema in an SDL document or an introspection result (JSON)."""
    text = content.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"{":
        try:
            document = _json(text)
        except orjson.JSONDecodeError as exc:
            raise SpecError(f"not valid JSON: {exc}", source=source) from exc
        except JsonTooDeep as exc:
            raise SpecError(str(exc), source=source) from None
        introspection = _introspection_of(document)
        if introspection is None:
            raise SpecError(
                'a JSON document must be an introspection result: {"__schema": ...} or {"data": {"__schema": ...}}',
                source=source,
            )
        return schema_from_introspection(introspection, source)
    try:
        return schema_from_sdl(text.decode("utf-8"), source)
    except UnicodeDecodeError as exc:
        raise SpecError(f"SDL must be UTF-8 text (byte {exc.start} is not)", source=source) from exc


def schema_from_sdl(text: str, source: str) -> GraphQLSchema:
    try:
        document = parse(text)
    except GraphQLSyntaxError as exc:
        raise SpecError(f"invalid GraphQL SDL{_where(exc)}: {exc.message}", source=source) from exc
    errors = validate_sdl(document)
    fatal = [error for error in errors if not _tolerated(error, TOLERATED_SDL_ERRORS)]
    if fatal:
        raise SpecError(f"invalid GraphQL SDL: {_describe(fatal)}", source=source)
    try:
        schema = build_ast_schema(document, assume_valid_sdl=True)
    except (TypeError, GraphQLError) as exc:  # graphql-core reports schema construction faults as TypeError
        raise SpecError(f"invalid GraphQL schema: {exc}", source=source) from exc
    if _check(schema, source):
        schema = build_ast_schema(document, assume_valid=True, assume_valid_sdl=True)
    return schema


def schema_from_introspection(introspection: Mapping[str, Any], source: str) -> GraphQLSchema:
    try:
        schema = build_client_schema(introspection)  # type: ignore[arg-type]  # checked by graphql-core itself
    except (TypeError, KeyError, ValueError, GraphQLError) as exc:
        raise SpecError(f"invalid introspection result: {exc}", source=source) from exc
    if _check(schema, source):
        schema = build_client_schema(introspection, assume_valid=True)  # type: ignore[arg-type]
    return schema


def introspect(endpoint: str, headers: Mapping[str, str] | None, fetcher: Fetcher) -> GraphQLSchema:
    """Ask a live GraphQL endpoint for its schema with the standard introspection query (a guarded fetch)."""
    if not is_url(endpoint):
        raise SpecError("introspection needs an http(s) URL of a GraphQL endpoint", source=endpoint)
    body = orjson.dumps({"query": get_introspection_query(descriptions=True), "operationName": "IntrospectionQuery"})
    try:
        # A redirect would resend the query (and its headers, maybe credentials) elsewhere: not followed.
        response = fetcher.request(
            "POST",
            endpoint,
            headers={"Content-Type": "application/json", "Accept": _ACCEPT},
            credentials=headers,
            body=body,
            follow_redirects=False,
        )
    except FetchError as exc:
        raise fetch_error(exc, endpoint, "introspect it") from None
    content = response.body
    if response.status in REDIRECT_STATUSES and response.headers.get("location"):
        raise SpecError(
            f"introspection failed: HTTP {response.status}: redirected to {response.headers['location']}; "
            "introspect that URL instead",
            source=endpoint,
        )
    if not 200 <= response.status < 300:
        detail = _graphql_errors(content)
        raise SpecError(
            f"introspection failed: HTTP {response.status} {response.reason}" + (f": {detail}" if detail else ""),
            source=endpoint,
        )
    try:
        answer = _json(content)
    except orjson.JSONDecodeError as exc:
        raise SpecError("introspection failed: the endpoint did not answer with JSON", source=endpoint) from exc
    except JsonTooDeep as exc:
        raise SpecError(f"introspection failed: {exc}", source=endpoint) from None
    introspection = _introspection_of(answer)
    if introspection is None:
        detail = _graphql_errors(content)
        raise SpecError("introspection failed: " + (detail or "the answer holds no data.__schema"), source=endpoint)
    return schema_from_introspection(introspection, endpoint)


def _json(content: bytes) -> Any:
    document = orjson.loads(content)
    check_depth(document, MAX_JSON_DEPTH)
    return document


def _introspection_of(document: Any) -> Mapping[str, Any] | None:
    """The `{"__schema": ...}` object of an introspection result, in either of its usual shapes."""
    if isinstance(document, dict) and isinstance(document.get("data"), dict):
        document = document["data"]
    if isinstance(document, dict) and isinstance(document.get("__schema"), dict):
        return document
    return None


def _graphql_errors(content: bytes) -> str:
    try:
        answer = orjson.loads(content)
    except orjson.JSONDecodeError:
        return ""
    errors = answer.get("errors") if isinstance(answer, dict) else None
    if not isinstance(errors, list):
        return ""
    return "; ".join(str(e.get("message")) for e in errors[:MAX_REPORTED_ERRORS] if isinstance(e, dict))


def _check(schema: GraphQLSchema, source: str) -> bool:
    """Refuse a schema with faults beyond the tolerated ones; True when it has tolerated faults."""
    if schema.query_type is None:
        raise SpecError("the schema has no Query type (no `type Query` nor `schema { query: ... }`)", source=source)
    errors = validate_schema(schema)
    fatal = [error for error in errors if not _tolerated(error, TOLERATED_SCHEMA_ERRORS)]
    if fatal:
        raise SpecError(f"invalid GraphQL schema: {_describe(fatal)}", source=source)
    return bool(errors)


def _tolerated(error: GraphQLError, patterns: Sequence[re.Pattern[str]]) -> bool:
    return any(pattern.search(error.message) for pattern in patterns)


def _where(error: GraphQLError) -> str:
    if not error.locations:
        return ""
    location = error.locations[0]
    return f" at line {location.line}, column {location.column}"


def _describe(errors: Sequence[GraphQLError]) -> str:
    shown = "; ".join(f"{error.message}{_where(error)}" for error in errors[:MAX_REPORTED_ERRORS])
    more = len(errors) - MAX_REPORTED_ERRORS
    return shown + (f" (and {more} more)" if more > 0 else "")
