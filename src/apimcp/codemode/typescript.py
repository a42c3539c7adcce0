"""TypeScript declarations of tools, made from their JSON Schemas, for a model writing a code-mode program.

`declarations(tools)` writes `declare const tools: { ... };` with one method per tool: its arguments' type
from the input schema (each top-level property with the first sentence of its description), its promise's
type from the output schema (`unknown` without one). Types follow JSON Schema as far as TypeScript can say
it: `type` (and lists of types), `enum`, `const`, `anyOf`/`oneOf` (unions), `allOf` (intersections), arrays,
tuples (`prefixItems`), objects with optional and required properties and additional properties, local
`$ref`s (`#/$defs/...`, `#/definitions/...`, `#/components/schemas/...`), OpenAPI 3.0's `nullable`.

Schemas come from API descriptions, so they are bounded here: nesting beyond `MAX_DEPTH` (and any reference
cycle, or chain of more than `MAX_REF_HOPS` references) is `unknown`, long enums and long literals are their base
type, and a declaration longer than `MAX_CHARS` (or whose writing reads more than `MAX_NODES` nodes or writes more
than `MAX_WRITTEN` characters) is written again shallower until it fits (a huge output schema ends as `unknown`,
its tool still declared).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from apimcp.protocol.models import Tool

log = logging.getLogger("apimcp.codemode")

MAX_DEPTH: Final = 6
MAX_CHARS: Final = 6000
"""A tool's declaration, at most (characters)."""
MAX_ENUM: Final = 40
MAX_NODES: Final = 2000
"""Schema nodes one declaration reads at most at one depth: definitions that share sub-schemas are read each time
they are referred to, so a few kilobytes of them can stand for an exponential tree; past this, a shallower depth is
tried, as for a declaration too long."""

MAX_WRITTEN: Final = 4 * MAX_CHARS
"""Characters of types one declaration writes at most at one depth, the pieces nested types are made of counted
too: definitions that repeat a long literal wherever they are referred to would write gigabytes before the
declaration's length could be checked; past this, a shallower depth is tried."""
MAX_LITERAL_CHARS: Final = 200
"""A `const` or `enum` value longer than this is declared as its type (`string`), not spelled out."""
MAX_REF_HOPS: Final = 32
"""References followed in a row (a chain of definitions each naming the next) before the type is `unknown`."""

MAX_DESCRIPTION_CHARS: Final = 160

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_REF_PREFIXES: Final = ("#/$defs/", "#/definitions/", "#/components/schemas/")
RESERVED: Final = frozenset({"then"})
"""Names the program's `tools` object answers with nothing: declared, they would mislead."""


def property_name(name: str) -> str:
    """`name` as a TypeScript property key: bare when it is an identifier, quoted otherwise."""
    return name if _IDENTIFIER.match(name) else orjson.dumps(name).decode()


def access(name: str) -> str:
    """How a program calls the tool `name`: `tools.name` or `tools["odd-name"]`."""
    return f"tools.{name}" if _IDENTIFIER.match(name) else f"tools[{orjson.dumps(name).decode()}]"


def summary(text: object) -> str:
    """The first sentence of a description, on one line, cut at `MAX_DESCRIPTION_CHARS`; safe in a comment (a
    description that is not a string, as an MCP server may write one, is none)."""
    if not text or not isinstance(text, str):
        return ""
    line = " ".join(text.split())
    line = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(line) > MAX_DESCRIPTION_CHARS:
        line = line[: MAX_DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return line.replace("*/", "* /")


class _TooMany(Exception):
    """The schema has more nodes within the depth than `MAX_NODES`, or its types more characters than
    `MAX_WRITTEN`."""


class _Writer:
    """Types of one tool's schemas, `depth` levels deep at most; references resolved in `root`."""

    def __init__(self, root: Mapping[str, Any], depth: int) -> None:
        self._root = root
        self._depth = depth
        self._budget = MAX_NODES
        self._written_budget = MAX_WRITTEN

    def type_of(self, schema: Any, level: int = 0, seen: frozenset[str] = frozenset()) -> str:
        if schema is False:
            return "never"
        self._budget -= 1
        if self._budget < 0:
            raise _TooMany
        if not isinstance(schema, Mapping) or level > self._depth:
            return "unknown"
        reference = schema.get("$ref")
        if isinstance(reference, str):
            target = self._resolve(reference)
            if target is None or reference in seen or len(seen) >= MAX_REF_HOPS:
                return "unknown"
            return self.type_of(target, level, seen | {reference})
        written = self._written(schema, level, seen)
        if schema.get("nullable") is True and written not in {"unknown", "null"}:
            written = f"{_grouped(written)} | null"
        self._written_budget -= len(written)
        if self._written_budget < 0:
            raise _TooMany
        return written

    def _written(self, schema: Mapping[str, Any], level: int, seen: frozenset[str]) -> str:
        if "const" in schema:
            return _literal(schema["const"])
        choices = schema.get("enum")
        if isinstance(choices, list) and 0 < len(choices) <= MAX_ENUM:
            return " | ".join(dict.fromkeys(_literal(choice) for choice in choices))
        for union in ("anyOf", "oneOf"):
            options = schema.get(union)
            if isinstance(options, list) and options:
                return _union(self.type_of(option, level + 1, seen) for option in options)
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            types = [t for t in dict.fromkeys(self.type_of(part, level + 1, seen) for part in parts) if t != "unknown"]
            return " & ".join(_grouped(t) for t in types) if types else "unknown"
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self._of_type(schema, str(k), level, seen) for k in kind)
        if isinstance(kind, str):
            return self._of_type(schema, kind, level, seen)
        if "properties" in schema:
            return self._object(schema, level, seen)
        if "items" in schema or "prefixItems" in schema:
            return self._array(schema, level, seen)
        return "unknown"

    def _of_type(self, schema: Mapping[str, Any], kind: str, level: int, seen: frozenset[str]) -> str:
        if kind == "object":
            return self._object(schema, level, seen)
        if kind == "array":
            return self._array(schema, level, seen)
        return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}.get(
            kind, "unknown"
        )

    def _array(self, schema: Mapping[str, Any], level: int, seen: frozenset[str]) -> str:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            return "[" + ", ".join(self.type_of(item, level + 1, seen) for item in prefix) + "]"
        items = schema.get("items")
        if isinstance(items, list):  # draft 4 tuples
            return "[" + ", ".join(self.type_of(item, level + 1, seen) for item in items) + "]"
        return f"{_grouped(self.type_of(items, level + 1, seen) if items is not None else 'unknown')}[]"

    def _object(self, schema: Mapping[str, Any], level: int, seen: frozenset[str]) -> str:
        fields = self.fields(schema, level, seen)
        return "{ " + " ".join(f"{name}: {kind};" for name, kind, _ in fields) + " }" if fields else "{}"

    def fields(self, schema: Mapping[str, Any], level: int, seen: frozenset[str] = frozenset()) -> list[
        tuple[str, str, str]
    ]:  # fmt: skip
        """(key, type, description) of each property of an object schema, and its index signature if any."""
        properties = schema.get("properties")
        required = schema.get("required")
        needed = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
        out = []
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                key = property_name(str(name)) + ("" if name in needed else "?")
                description = summary(sub.get("description")) if isinstance(sub, Mapping) else ""
                out.append((key, self.type_of(sub, level + 1, seen), description))
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) or (not out and extra is not False):
            kind = self.type_of(extra, level + 1, seen) if isinstance(extra, Mapping) else "unknown"
            if out:  # an index signature takes every property's type too (TS2411), and undefined for optional ones
                optional = ["undefined"] if any(key.endswith("?") for key, _, _ in out) else []
                kind = _union([kind, *(kind for _, kind, _ in out), *optional])
            out.append(("[key: string]", kind, ""))
        return out

    def _resolve(self, reference: str) -> Any:
        for prefix in _REF_PREFIXES:
            if reference.startswith(prefix):
                node: Any = self._root
                for part in prefix[2:-1].split("/"):
                    node = node.get(part) if isinstance(node, Mapping) else None
                name = reference[len(prefix) :].replace("~1", "/").replace("~0", "~")
                return node.get(name) if isinstance(node, Mapping) else None
        return None


def _literal(value: Any) -> str:
    if isinstance(value, str) and len(value) > MAX_LITERAL_CHARS:
        return "string"
    try:
        return (
            orjson.dumps(value).decode() if isinstance(value, str | int | float | bool) or value is None else "unknown"
        )
    except TypeError:
        return "unknown"


def _grouped(kind: str) -> str:
    """`kind` wrapped in parentheses when it is a union or intersection at its top level (not inside braces, nor
    inside a string literal: `"{" | "b"`)."""
    depth = 0
    quoted = escaped = False
    for index, char in enumerate(kind):
        if quoted:
            quoted = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            quoted = True
        elif char in "{[(<":
            depth += 1
        elif char in "}])>":
            depth -= 1
        elif depth == 0 and char in "|&" and kind[index - 1 : index + 2] in {" | ", " & "}:
            return f"({kind})"
    return kind


def _union(types: Iterable[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "unknown" in unique:
        return "unknown"
    return " | ".join(unique) if unique else "unknown"


def declaration(tool: Tool) -> str:
    """One method of `tools`: a comment with the tool's title or summary, its arguments, its result."""
    for depth in range(MAX_DEPTH, -1, -1):
        try:
            text = _declaration(tool, depth)
        except _TooMany:
            continue
        except Exception:  # a schema odd in a way not foreseen: the tool is still declared, its arguments loosely
            log.exception("the TypeScript declaration of %s fell back to loose arguments", tool.name)
            break
        if len(text) <= MAX_CHARS:
            return text
    return _declaration(tool, -1)


def _declaration(tool: Tool, depth: int) -> str:
    about = summary(tool.title) or summary(tool.description)
    lines = [f"  /** {about} */"] if about else []
    inputs = _Writer(tool.input_schema, depth)
    fields = inputs.fields(tool.input_schema, 0) if depth >= 0 else [("[key: string]", "unknown", "")]
    arguments = "args"
    if not fields:
        arguments = "args?"
    output = "unknown"
    if tool.output_schema is not None and depth >= 0:
        output = _Writer(tool.output_schema, depth).type_of(tool.output_schema)
    # unquoted, `new(...)` would declare a constructor, not a method named new
    method = property_name(tool.name) if tool.name != "new" else '"new"'
    head = f"  {method}({arguments}: "
    if not fields:
        lines.append(f"{head}{{}}): Promise<{output}>;")
        return "\n".join(lines)
    lines.append(head + "{")
    for key, kind, description in fields:
        if description:
            lines.append(f"    /** {description} */")
        lines.append(f"    {key}: {kind};")
    lines.append(f"  }}): Promise<{output}>;")
    return "\n".join(lines)


def declarations(tools: Iterable[Tool]) -> str:
    """`declare const tools: {...};` declaring each of `tools` (a program's `tools` object)."""
    body = [declaration(tool) for tool in tools if tool.name not in RESERVED]
    return "declare const tools: {\n" + "\n".join(body) + "\n};"
