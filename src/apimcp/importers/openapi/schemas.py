"""OpenAPI schema objects to self-contained JSON Schema 2020-12.

Every `$ref` becomes a reference into `$defs`, each target converted once and
shared by every tool that needs it; a tool's schema carries only the
definitions it reaches. Cycles therefore stay cycles (`#/$defs/Node` refers to
itself) instead of being inlined forever. OpenAPI 3.0 dialect is translated:
`nullable` becomes a type union, boolean `exclusiveMinimum`/`exclusiveMaximum`
become numbers, `example` becomes `examples`. Input schemas lose `readOnly`
properties, output schemas lose `writeOnly` ones; file content is declared as
base64 text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import DocumentSet, pointer_get

SchemaMode = Literal["input", "output"]
JsonObject = dict[str, Any]

_MAX_DEPTH = 200
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_VALUES = frozenset(
    {
        "items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "additionalItems", "contentSchema",
    }
)  # fmt: skip
_DROPPED = frozenset({"xml", "externalDocs", "$schema", "$id", "nullable", "required", "example"})
_GENERIC_SEGMENTS = frozenset(
    {"schema", "items", "properties", "content", "application/json", "additionalProperties", "allOf", "anyOf",
     "oneOf", "not", ""}
)  # fmt: skip
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
BINARY_HINT = "File content: base64, or a data: URL (data:<media type>;base64,<data>)."


class SchemaConverter:
    """Converts the schemas of one description, sharing converted definitions between calls."""

    def __init__(self, documents: DocumentSet, *, openapi_30: bool, mode: SchemaMode) -> None:
        self._documents = documents
        self._openapi_30 = openapi_30
        self._mode = mode
        self.definitions: dict[str, Any] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._used_names: set[str] = set()
        self._dependencies: dict[str, set[str]] = {}
        self._closures: dict[str, frozenset[str]] = {}

    # --- public ------------------------------------------------------------------------------

    def convert(self, schema: Any, uri: str, pointer: str = "") -> tuple[Any, set[str]]:
        """The converted schema and the names of the definitions it references directly."""
        references: set[str] = set()
        return self._convert(schema, uri, pointer, references, 0), references

    def bundle(self, schema: JsonObject, references: Iterable[str]) -> JsonObject:
        """`schema` with a `$defs` holding every definition it reaches."""
        reached = self.closure(references)
        if not reached:
            return schema
        return {**schema, "$defs": {name: self.definitions[name] for name in sorted(reached)}}

    def inline_root(self, schema: JsonObject, references: set[str]) -> tuple[JsonObject, set[str]]:
        """Replace a root that only refers to a (non-recursive) definition by that definition.

        Clients read `properties` at the root of tool schemas more readily than a `$ref`.
        """
        reference = schema.get("$ref")
        if (
            not isinstance(reference, str)
            or not reference.startswith("#/$defs/")
            or not set(schema)
            <= {
                "$ref",
                "type",
                "description",
            }
        ):
            return schema, references
        name = reference.removeprefix("#/$defs/")
        dependencies = self._dependencies.get(name, set())
        target = self.definitions.get(name)
        if not isinstance(target, dict) or name in self.closure(dependencies):
            return schema, references
        inlined = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return inlined, (references - {name}) | dependencies

    def closure(self, names: Iterable[str]) -> frozenset[str]:
        reached: set[str] = set()
        for name in names:
            reached |= self._closure_of(name)
        return frozenset(reached)

    def resolve(self, schema: Any, uri: str) -> tuple[Any, str]:
        """Follow `$ref`s to the schema they name, for inspection (not conversion)."""
        seen: set[tuple[str, str]] = set()
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            file_part, _, fragment = schema["$ref"].partition("#")
            uri = self._documents.absolute(uri, file_part)
            if (uri, fragment) in seen:
                raise SpecError(f"reference cycle through {schema['$ref']!r} names no schema", source=uri)
            seen.add((uri, fragment))
            schema = pointer_get(self._documents.document(uri), fragment, uri)
        return schema, uri

    def is_object(self, schema: Any, uri: str) -> bool:
        """Whether a schema describes a plain object (properties, no top-level composition)."""
        raw, _ = self.resolve(schema, uri)
        if not isinstance(raw, dict) or any(k in raw for k in ("oneOf", "anyOf", "allOf", "not")):
            return False
        kind = raw.get("type")
        return kind == "object" or (kind is None and "properties" in raw)

    def flag(self, schema: Any, uri: str, keyword: str) -> bool:
        """Whether a schema (or the schema its `$ref` names) sets a boolean keyword."""
        if isinstance(schema, dict) and schema.get(keyword) is True:
            return True
        raw, _ = self.resolve(schema, uri)
        return isinstance(raw, dict) and raw.get(keyword) is True

    def is_binary(self, schema: Any, uri: str) -> bool:
        """Whether a schema describes raw file content."""
        raw, _ = self.resolve(schema, uri)
        if not isinstance(raw, dict):
            return False
        return raw.get("format") in ("binary", "byte") or "contentMediaType" in raw or raw.get("type") == "file"

    def is_binary_array(self, schema: Any, uri: str) -> bool:
        """Whether a schema is an array of raw file contents."""
        raw, raw_uri = self.resolve(schema, uri)
        return isinstance(raw, dict) and raw.get("type") == "array" and self.is_binary(raw.get("items"), raw_uri)

    # --- conversion --------------------------------------------------------------------------

    def _convert(self, schema: Any, uri: str, pointer: str, refs: set[str], depth: int) -> Any:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            raise SpecError("a schema must be an object", source=uri, pointer=pointer or None)
        if depth > _MAX_DEPTH:
            raise SpecError("schema nesting is too deep", source=uri, pointer=pointer or None)
        out: JsonObject = {}
        reference = schema.get("$ref")
        if isinstance(reference, str):
            out.update(self._reference(reference, uri, refs))
            if self._openapi_30:  # 3.0: siblings of $ref are ignored, except a description worth keeping
                if isinstance(schema.get("description"), str):
                    out["description"] = schema["description"]
                return out
        removed: set[str] = set()
        for key, value in schema.items():
            if key == "$ref" or key in _DROPPED or key.startswith("x-"):
                continue
            at = f"{pointer}/{key}"
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = self._convert_map(key, value, uri, at, refs, depth, removed)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._convert(v, uri, f"{at}/{i}", refs, depth + 1) for i, v in enumerate(value)]
            elif key in _SCHEMA_VALUES:
                if key == "items" and isinstance(value, list):  # tuple form of older drafts
                    out["prefixItems"] = [
                        self._convert(v, uri, f"{at}/{i}", refs, depth + 1) for i, v in enumerate(value)
                    ]
                else:
                    out[key] = self._convert(value, uri, at, refs, depth + 1)
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in schema:
                    out[key] = schema[bound]
            elif key == "discriminator" and isinstance(value, dict):
                out[key] = self._discriminator(value, uri, refs)
            elif key == "type" and value == "file":
                out["type"] = "string"
                out["format"] = "binary"
            else:
                out[key] = value
        if "exclusiveMinimum" in out and isinstance(schema.get("exclusiveMinimum"), bool):
            out.pop("minimum", None)
        if "exclusiveMaximum" in out and isinstance(schema.get("exclusiveMaximum"), bool):
            out.pop("maximum", None)
        required = schema.get("required")
        if isinstance(required, list):
            kept = [name for name in required if name not in removed]
            if kept:
                out["required"] = kept
        if "example" in schema and "examples" not in schema:
            out["examples"] = [schema["example"]]
        if self._mode == "input" and out.get("format") == "binary" and out.get("type") == "string":
            del out["format"]
            out["contentEncoding"] = "base64"
            out.setdefault("description", BINARY_HINT)
        if self._openapi_30 and schema.get("nullable") is True:
            return _nullable(out)
        return out

    def _convert_map(
        self, key: str, value: Mapping[str, Any], uri: str, at: str, refs: set[str], depth: int, removed: set[str]
    ) -> JsonObject:
        converted: JsonObject = {}
        hidden = "readOnly" if self._mode == "input" else "writeOnly"
        for name, sub in value.items():
            if key == "properties" and self.flag(sub, uri, hidden):
                removed.add(name)
                continue
            converted[name] = self._convert(sub, uri, f"{at}/{name}", refs, depth + 1)
        return converted

    def _discriminator(self, value: Mapping[str, Any], uri: str, refs: set[str]) -> JsonObject:
        out = {k: v for k, v in value.items() if not k.startswith("x-")}
        mapping = value.get("mapping")
        if isinstance(mapping, dict):
            rewritten = {}
            for tag, target in mapping.items():
                if isinstance(target, str) and "#" in target:
                    rewritten[tag] = self._reference(target, uri, refs)["$ref"]
                else:
                    rewritten[tag] = target
            out["mapping"] = rewritten
        return out

    def _reference(self, reference: str, uri: str, refs: set[str]) -> JsonObject:
        file_part, _, fragment = reference.partition("#")
        target_uri = self._documents.absolute(uri, file_part)
        key = (target_uri, fragment)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self._new_name(fragment, target_uri)
            dependencies: set[str] = set()
            self._dependencies[name] = dependencies  # registered first, so a cycle finds the name
            target = pointer_get(self._documents.document(target_uri), fragment, target_uri)
            self.definitions[name] = True  # placeholder while converting
            self.definitions[name] = self._convert(target, target_uri, fragment, dependencies, 0)
        refs.add(name)
        return {"$ref": "#/$defs/" + name}

    def _new_name(self, fragment: str, uri: str) -> str:
        segments = [s.replace("~1", "/").replace("~0", "~") for s in fragment.split("/")]
        while segments and segments[-1] in _GENERIC_SEGMENTS:
            segments.pop()
        if segments and segments[-1]:
            base = _NAME_UNSAFE.sub("_", segments[-1]).strip("_")
        else:
            base = _NAME_UNSAFE.sub("_", uri.rsplit("/", 1)[-1].rsplit(".", 1)[0]).strip("_")
        if base.isdigit() or not base:
            base = _NAME_UNSAFE.sub("_", fragment).strip("_") or "schema"
        name, counter = base, 2
        while name in self._used_names:
            name = f"{base}_{counter}"
            counter += 1
        self._used_names.add(name)
        return name

    def _closure_of(self, name: str) -> frozenset[str]:
        known = self._closures.get(name)
        if known is not None:
            return known
        reached: set[str] = set()
        pending = [name]
        while pending:
            current = pending.pop()
            if current in reached:
                continue
            reached.add(current)
            cached = self._closures.get(current)
            if cached is not None:
                reached |= cached
                continue
            pending.extend(self._dependencies.get(current, ()))
        result = frozenset(reached)
        self._closures[name] = result
        return result


def _nullable(schema: JsonObject) -> JsonObject:
    """OpenAPI 3.0 `nullable: true` in JSON Schema terms."""
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
    else:
        return {"anyOf": [schema, {"type": "null"}]}
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*enum, None]
    return schema
