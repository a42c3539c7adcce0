"""Compiling the JSON Schemas the gateway validates with (2020-12, `jsonschema_rs`), never reaching outside them.

Schemas come from descriptions, artifact files and MCP servers: a `$ref` to anything but the schema itself is
refused, never fetched or read, and a schema that does not compile is said in one line, not raised as whatever
the validator raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs


def outside(uri: str) -> Any:
    """The retriever of every schema compiled here: nothing outside it is read."""
    raise ValueError(f"{uri} is outside the schema")


class SchemaProblem(ValueError):
    """A schema the validator cannot compile; the message says why, in one line."""


def compiled(schema: Any) -> Any:
    """The validator of `schema`; SchemaProblem when it does not compile (a bad pattern, a keyword of the wrong type,
    a `$ref` outside it)."""
    try:
        return jsonschema_rs.Draft202012Validator(dict(schema) if isinstance(schema, Mapping) else schema,
                                                  retriever=outside)  # fmt: skip
    except jsonschema_rs.ValidationError as exc:
        raise SchemaProblem(exc.message.splitlines()[0]) from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise SchemaProblem(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def compile_problem(schema: Any) -> str | None:
    """Why `schema` does not compile, or None."""
    try:
        compiled(schema)
    except SchemaProblem as problem:
        return str(problem)
    return None
