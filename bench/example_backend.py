"""A mock REST backend built from an OpenAPI description: every operation answers its own example.

Each operation (method and path template) answers its first 2xx response as declared: its status code, and for a
JSON body the media type's `example`, else the first of its `examples` (a `$ref` to `components/examples` is
followed to its `value`), else a minimal value made from the schema (required properties only; `enum`'s first
value; null where the schema allows it; empty arrays and strings; 0; false). A 2xx response without a JSON body
answers its status alone. Path parameters match any one segment (a `/` sent as `%2F` stays inside it), literal
segments win over parameters, the query and the body are ignored; a path and method no operation has answer 404.
Answers are built once, at start-up.

Examples do not always say what their schemas say: GitHub's `repos/get` example lacks `language`, which its
`full-repository` schema requires, and a gateway that checks answers against output schemas refuses it. So an
object of an example is given the required properties it lacks (their minimal values, at any depth where the
schema says which properties an object has); nothing else of an example is changed. `--verbatim` answers the
examples exactly as written. The number of examples completed is printed at start-up.

It stands for a real API behind `bench/exposure_bench.py` (GitHub's description by default).

    python -m bench.example_backend --port 8084 [--spec PATH] [--verbatim]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import uvloop
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tools" / "node" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_PARAMETER = re.compile(r"\{[^{}]+\}")
_MAX_DEPTH = 12
_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "uri": "https://example.com/",
    "email": "octocat@example.com",
}


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes | None


@dataclass(frozen=True)
class Route:
    pattern: re.Pattern[str]
    rank: tuple[int, ...]  # per segment, 0 for a literal and 1 for a parameter: literals win
    answer: Answer


def resolve(spec: Mapping[str, Any], node: Any) -> Any:
    """`node` with its local `$ref`s followed (JSON pointers, `~1` and `~0` unescaped)."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node, seen = target, seen + 1
    return node


def minimal(spec: Mapping[str, Any], schema: Any, depth: int = 0) -> Any:
    """The smallest value `schema` allows, or close to it: what an operation without an example answers."""
    schema = resolve(spec, schema)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or schema.get("nullable") is True:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = minimal(spec, part, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    for key in ("oneOf", "anyOf"):
        if schema.get(key):
            return minimal(spec, schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0] if kind else None
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: minimal(spec, properties.get(name, {}), depth + 1)
            for name in schema.get("required", [])
            if name in properties
        }
    if kind == "array":
        return []
    if kind == "string":
        return _FORMATS.get(schema.get("format", ""), "")
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def complete(spec: Mapping[str, Any], schema: Any, value: Any, depth: int = 0) -> tuple[Any, int]:
    """`value` given the required properties its objects lack, where `schema` says what they are; how many."""
    schema = resolve(spec, schema)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return value, 0
    added = 0
    for part in schema.get("allOf", ()):
        value, more = complete(spec, part, value, depth + 1)
        added += more
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        value = dict(value)
        for name in schema.get("required", ()):
            if name not in value and name in properties:
                value[name] = minimal(spec, properties[name], depth + 1)
                added += 1
        for name, item in value.items():
            if name in properties and item is not None:
                value[name], more = complete(spec, properties[name], item, depth + 1)
                added += more
    elif isinstance(value, list) and "items" in schema:
        items = []
        for element in value:
            done, more = complete(spec, schema["items"], element, depth + 1)
            items.append(done)
            added += more
        value = items
    return value, added


def example(spec: Mapping[str, Any], media: Mapping[str, Any]) -> Any:
    """The media type's example, or None when it has none."""
    if "example" in media:
        return media["example"]
    examples = media.get("examples")
    if isinstance(examples, dict) and examples:
        first = resolve(spec, next(iter(examples.values())))
        if isinstance(first, dict) and "value" in first:
            return first["value"]
    return None


@dataclass
class Made:
    """What start-up made of the description's answers."""

    examples: int = 0
    from_schemas: int = 0
    completed: int = 0


def answer(spec: Mapping[str, Any], operation: Mapping[str, Any], made: Made, verbatim: bool) -> Answer:
    responses = operation.get("responses", {})
    code = next((c for c in responses if str(c).startswith("2")), None)
    if code is None:
        return Answer(200, b"{}")
    response = resolve(spec, responses[code])
    content = response.get("content", {}) if isinstance(response, dict) else {}
    media = next((m for t, m in content.items() if t == "application/json" or t.endswith("+json")), None)
    if media is None:
        return Answer(int(code), None)
    value = example(spec, media)
    if value is None:
        made.from_schemas += 1
        return Answer(int(code), orjson.dumps(minimal(spec, media.get("schema", {}))))
    made.examples += 1
    if not verbatim:
        value, added = complete(spec, media.get("schema", {}), value)
        made.completed += added > 0
    return Answer(int(code), orjson.dumps(value))


def routes(spec: Mapping[str, Any], made: Made, verbatim: bool = False) -> dict[tuple[str, int], list[Route]]:
    """Routes by method and number of segments, the most literal first."""
    table: dict[tuple[str, int], list[Route]] = defaultdict(list)
    for template, item in spec.get("paths", {}).items():
        segments = template.strip("/").split("/")
        regex = "/".join("[^/]+".join(map(re.escape, _PARAMETER.split(s))) for s in segments)
        rank = tuple(1 if _PARAMETER.search(s) else 0 for s in segments)
        for method, operation in item.items():
            if method in METHODS:
                route = Route(re.compile(f"/{regex}"), rank, answer(spec, operation, made, verbatim))
                table[method.upper(), len(segments)].append(route)
    for candidates in table.values():
        candidates.sort(key=lambda route: route.rank)
    return table


def make_app(spec: Mapping[str, Any], verbatim: bool = False) -> web.Application:
    made = Made()
    table = routes(spec, made, verbatim)
    operations = sum(len(candidates) for candidates in table.values())
    print(
        f"example_backend: {operations:,} operations; {made.examples:,} JSON examples "
        f"({made.completed:,} given required properties they lacked), {made.from_schemas:,} answers made from schemas",
        file=sys.stderr,
    )

    async def handle(request: web.Request) -> web.Response:
        path = request.raw_path.split("?", 1)[0]
        segments = path.strip("/").split("/")
        for route in table.get((request.method, len(segments)), ()):
            if route.pattern.fullmatch(path):
                found = route.answer
                if found.body is None:
                    return web.Response(status=found.status)
                return web.Response(status=found.status, body=found.body, content_type="application/json")
        return web.Response(status=404, body=b'{"message":"Not Found"}', content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--verbatim", action="store_true", help="answer the examples exactly as written")
    args = parser.parse_args()
    spec = orjson.loads(args.spec.read_bytes())
    uvloop.install()
    web.run_app(make_app(spec, args.verbatim), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
