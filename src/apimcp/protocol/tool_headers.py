"""`x-mcp-header`: tool arguments mirrored into Mcp-Param-{Name} headers (2026-07-28).

A tool's input schema may mark primitive properties, reachable from the root
through `properties` keys only, with ``"x-mcp-header": "Name"``. Clients then
send the argument's value in ``Mcp-Param-Name`` as well, and the server must
refuse a call whose header is missing, malformed or different from the body.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from apimcp.protocol.headers import MalformedHeader, decode_header_value


@dataclass(frozen=True, slots=True)
class HeaderParam:
    header: bytes
    """Lower-cased suffix after ``mcp-param-``, as ASGI presents header names."""
    label: str
    path: tuple[str, ...]
    kind: str


def header_params(schema: Mapping[str, Any]) -> tuple[HeaderParam, ...]:
    """Every annotated property of an input schema, in declaration order."""
    return tuple(_walk(schema, ()))


def _walk(schema: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[HeaderParam]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for key, sub in properties.items():
        if not isinstance(sub, Mapping):
            continue
        name = sub.get("x-mcp-header")
        if isinstance(name, str) and name:
            kind = sub.get("type")
            yield HeaderParam(name.lower().encode("ascii", "replace"), name, (*path, key), str(kind))
        yield from _walk(sub, (*path, key))


def _value_at(arguments: object, path: tuple[str, ...]) -> object:
    value = arguments
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A number as JSON writes one: not `1_0`, `inf` or `0x10`, which Python would read too."""


def _same(kind: str, header: str, value: object) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        # compared numerically, and exactly: through float, 9007199254740993 equalled 9007199254740992
        exact = Decimal(value) if isinstance(value, int) else Decimal(repr(value))  # a float as JSON wrote it
        return _NUMBER.fullmatch(header) is not None and Decimal(header) == exact
    return header == value


def check_param_headers(
    params: tuple[HeaderParam, ...], arguments: object, headers: Mapping[bytes, bytes]
) -> str | None:
    """What is wrong with the Mcp-Param-* headers of a call, or None when they match the body."""
    for param in params:
        value = _value_at(arguments, param.path)
        raw = headers.get(param.header)
        label = f"Mcp-Param-{param.label}"
        if value is None:
            if raw is not None:
                return f"Header {label} is present but the argument it mirrors is not"
            continue
        if raw is None:
            return f"Missing required header {label}"
        try:
            text = decode_header_value(raw)
        except MalformedHeader as exc:
            return f"Header {label} {exc}"
        if not _same(param.kind, text, value):
            return f"Header mismatch: {label} header value {text!r} does not match body value {value!r}"
    return None
