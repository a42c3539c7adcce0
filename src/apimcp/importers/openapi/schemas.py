"""OpenAPI schema objects to self-contained JSON Schema 2020-12.

Every `$ref` becomes a reference into `$defs`, each target converted once and
shared by every tool that needs it; a tool's schema carries only the
definitions it reaches. Cycles therefore stay cycles (`#/$defs/Node` refers to
itself) instead of being inlined forever. OpenAPI 3.0 dialect is translated:
`nullable` becomes a type union, boolean `exclusiveMinimum`/`exclusiveMaximum`
become numbers, `example` becomes `examples`. Input schemas lose `readOnly`
properties, output schemas lose `writeOnly` ones; file content is declared as
base64 text.

Whatever a tool schema receives is valid 2020-12 that the gateway's validator compiles: each
keyword value is checked (see `keywords`), repaired when its intent is unambiguous or dropped, and
reported as a warning. Nesting is bounded: definitions are converted one after another from a work
list (a chain of references never deepens the stack), and a schema nested deeper than the limit
accepts any value below it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from apimcp.importers.cpu_budget import DEFAULT_MAX_CPU_SECONDS, CpuBudget
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import keywords
from apimcp.importers.openapi.keywords import shown
from apimcp.importers.openapi.loading import DocumentSet, pointer_get
from apimcp.importers.openapi.warnings import WarningLog

SchemaMode = Literal["input", "output"]
JsonObject = dict[str, Any]

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_VALUE_DEPTH = 32
_JSON_DEPTH_BUDGET = 224
"""How deep the JSON of a tool schema may nest (orjson, which encodes compiled services, stops at 255;
the rest is left for the envelope around it). A schema level costs up to two (`properties`, then a name)."""
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
_MISSING: Any = object()
BINARY_HINT = "File content: base64, or a data: URL (data:<media type>;base64,<data>)."


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """Bounds on what one schema of a description may nest (a compiled service must stay encodable
    and validators must never recurse without end), and on the CPU time an import may take."""

    max_depth: int = DEFAULT_MAX_DEPTH
    """Subschemas nested in one schema (references start again from 0); deeper ones accept any value."""
    max_value_depth: int = DEFAULT_MAX_VALUE_DEPTH
    """Arrays and objects nested in a keyword's value (`default`, `examples`, `enum`, `const`, an unknown
    keyword); deeper values are dropped."""
    max_cpu_seconds: float = DEFAULT_MAX_CPU_SECONDS
    """CPU time one OpenAPI import may take (its thread's): an import holds the GIL that the API and, in
    `apimcp serve`, the data plane share. Past it the import fails."""
    max_bundled_bytes: int = 256 * 1024 * 1024
    """JSON bytes of the definitions the tools of one import carry, each tool a copy of every one it reaches
    (DocuSign's eSignature API: 31 MB). One large definition every operation reaches multiplies: a 1 MB description
    became a 711 MB service. Past it the import fails."""

    def __post_init__(self) -> None:
        if self.max_depth < 1 or self.max_value_depth < 1:
            raise ValueError("schema depth limits are at least 1")
        if not self.max_cpu_seconds > 0:
            raise ValueError("max_cpu_seconds must be positive")
        if self.max_bundled_bytes < 1:
            raise ValueError("max_bundled_bytes must be positive")
        if 2 * self.max_depth + self.max_value_depth > _JSON_DEPTH_BUDGET:
            raise ValueError(f"twice max_depth plus max_value_depth must stay within {_JSON_DEPTH_BUDGET}")


class BundledBytes:
    """The JSON bytes of the definitions the tools of one import carry so far (`SchemaLimits.max_bundled_bytes`)."""

    __slots__ = ("_limit", "_source", "total")

    def __init__(self, limit: int, source: str | None = None) -> None:
        self._limit = limit
        self._source = source
        self.total = 0

    def add(self, size: int) -> None:
        self.total += size
        if self.total > self._limit:
            raise SpecError(
                f"its tools' schemas would carry more than {self._limit} bytes of definitions, each tool a copy of "
                "every definition it reaches (schema limit max_bundled_bytes, APIMCP_SCHEMA_MAX_BUNDLED_BYTES)",
                source=self._source,
            )


class SchemaConverter:
    """Converts the schemas of one description, sharing converted definitions between calls."""

    def __init__(
        self,
        documents: DocumentSet,
        *,
        openapi_30: bool,
        mode: SchemaMode,
        log: WarningLog,
        limits: SchemaLimits | None = None,
        budget: CpuBudget | None = None,
        bundled: BundledBytes | None = None,
    ) -> None:
        """`bundled`: shared by the converters of one import."""
        self._documents = documents
        self._openapi_30 = openapi_30
        self._mode = mode
        self._log = log
        self._limits = limits or SchemaLimits()
        self._budget = budget or CpuBudget(self._limits.max_cpu_seconds)
        self._bundled = bundled or BundledBytes(self._limits.max_bundled_bytes)
        self._sizes: dict[str, int] = {}
        self.definitions: dict[str, Any] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._used_names: set[str] = set()
        self._next_suffix: dict[str, int] = {}
        """Per base name, the first `_n` suffix not tried yet: naming stays O(1) however many share a base."""
        self._dependencies: dict[str, set[str]] = {}
        self._closures: dict[str, frozenset[str]] = {}
        self._pending: list[tuple[str, Any, str, str]] = []
        """Definitions named but not converted yet: (name, target, its document, its pointer)."""

    # --- public ------------------------------------------------------------------------------

    def convert(self, schema: Any, uri: str, pointer: str = "") -> tuple[Any, set[str]]:
        """The converted schema and the names of the definitions it references directly."""
        references: set[str] = set()
        converted = self._subschema(schema, uri, pointer, references, 0, keep=True)
        while self._pending:  # every definition reached, converted before anyone reads them
            name, target, target_uri, fragment = self._pending.pop()
            dependencies = self._dependencies[name]
            self.definitions[name] = self._subschema(target, target_uri, fragment, dependencies, 0, keep=True)
        return converted, references

    def bundle(self, schema: JsonObject, references: Iterable[str]) -> JsonObject:
        """`schema` with a `$defs` holding every definition it reaches."""
        reached = self.closure(references)
        if not reached:
            return schema
        self._bundled.add(sum(self._size(name) for name in reached))
        return {**schema, "$defs": {name: self.definitions[name] for name in sorted(reached)}}

    def _size(self, name: str) -> int:
        size = self._sizes.get(name)
        if size is None:
            size = self._sizes[name] = len(orjson.dumps(self.definitions[name]))
        return size

    def inline_root(self, schema: JsonObject, references: set[str]) -> tuple[JsonObject, set[str]]:
        """Replace a root that only refers to a (non-recursive) definition by that definition.

        Clients read `properties` at the root of tool schemas more readily than a `$ref`.
        """
        reference = schema.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/$defs/") or not set(schema) <= {
            "$ref", "type", "description"
        }:  # fmt: skip
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

    def resolve(self, schema: Any, uri: str, pointer: str = "") -> tuple[Any, str, str]:
        """Follow `$ref`s to the schema they name, for inspection (not conversion): the schema, its
        document and its pointer there."""
        seen: set[tuple[str, str]] = set()
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            file_part, _, fragment = schema["$ref"].partition("#")
            uri = self._documents.absolute(uri, file_part)
            if (uri, fragment) in seen:
                raise SpecError(f"reference cycle through {schema['$ref']!r} names no schema", source=uri)
            seen.add((uri, fragment))
            schema = pointer_get(self._documents.document(uri), fragment, uri)
            pointer = fragment
        return schema, uri, pointer

    def is_object(self, schema: Any, uri: str) -> bool:
        """Whether a schema describes a plain object (properties, no top-level composition)."""
        raw, _, _ = self.resolve(schema, uri)
        if not isinstance(raw, dict) or any(k in raw for k in ("oneOf", "anyOf", "allOf", "not")):
            return False
        kind = raw.get("type")
        return kind == "object" or (kind is None and "properties" in raw)

    def flag(self, schema: Any, uri: str, keyword: str) -> bool:
        """Whether a schema (or the schema its `$ref` names) sets a boolean keyword."""
        if isinstance(schema, dict) and schema.get(keyword) is True:
            return True
        raw, _, _ = self.resolve(schema, uri)
        return isinstance(raw, dict) and raw.get(keyword) is True

    def is_binary(self, schema: Any, uri: str) -> bool:
        """Whether a schema describes raw file content (`contentEncoding: binary` is how some
        descriptions mark a multipart file part)."""
        raw, _, _ = self.resolve(schema, uri)
        if not isinstance(raw, dict):
            return False
        return (
            raw.get("format") in ("binary", "byte")
            or "contentMediaType" in raw
            or raw.get("contentEncoding") == "binary"
            or raw.get("type") == "file"
        )

    def is_binary_array(self, schema: Any, uri: str) -> bool:
        """Whether a schema is an array of raw file contents."""
        raw, raw_uri, _ = self.resolve(schema, uri)
        return isinstance(raw, dict) and raw.get("type") == "array" and self.is_binary(raw.get("items"), raw_uri)

    # --- conversion --------------------------------------------------------------------------

    def _warn(self, uri: str, pointer: str, problem: str) -> None:
        self._log.add(uri, pointer, problem)

    def _subschema(self, schema: Any, uri: str, pointer: str, refs: set[str], depth: int, *, keep: bool) -> Any:
        """The converted schema; a value that is no schema accepts any value when `keep` (a property
        keeps its name), else it is dropped (None)."""
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            outcome = "any value is accepted there" if keep else "dropped"
            self._warn(uri, pointer, f"{shown(schema)} is not a schema (an object or a boolean); {outcome}")
            return {} if keep else None
        if depth > self._limits.max_depth:
            self._warn(uri, pointer, f"schemas nest more than {self._limits.max_depth} levels deep here; any value "
                       "is accepted from this level down")  # fmt: skip
            return {}
        return self._convert(schema, uri, pointer, refs, depth)

    def _convert(self, schema: JsonObject, uri: str, pointer: str, refs: set[str], depth: int) -> Any:
        self._budget.check()
        out: JsonObject = {}
        if "$ref" in schema:
            reference = schema["$ref"]
            if isinstance(reference, str):
                out.update(self._reference(reference, uri, refs))
                if self._openapi_30:  # 3.0: siblings of $ref are ignored, except a description worth keeping
                    if isinstance(schema.get("description"), str):
                        out["description"] = schema["description"]
                    return out
            else:
                self._warn(uri, f"{pointer}/$ref", f"`$ref: {shown(reference)}` is not a string; dropped")
        removed: set[str] = set()
        lifted: list[str] = []
        for key, value in schema.items():
            if not isinstance(key, str):
                self._warn(uri, pointer, f"keyword {shown(key)} is not a string; dropped")
                continue
            if key == "$ref" or key in _DROPPED or key.startswith("x-"):
                continue
            at = f"{pointer}/{_escape(key)}"
            if key in _SCHEMA_MAPS:
                if isinstance(value, dict):
                    out[key] = self._convert_map(key, value, uri, at, refs, depth, removed, lifted)
                else:
                    self._warn(uri, at, f"`{key}` must be an object of schemas, not {shown(value)}; dropped")
            elif key in _SCHEMA_LISTS:
                converted_list = self._convert_list(key, value, uri, at, refs, depth)
                if converted_list is not None:
                    out[key] = converted_list
            elif key == "items" and isinstance(value, list):
                self._tuple_items(value, uri, at, refs, depth, out)
            elif key in _SCHEMA_VALUES:
                converted = self._subschema(value, uri, at, refs, depth + 1, keep=False)
                if converted is not None:
                    out[key] = converted
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in schema:
                    checked = self._value(bound, schema[bound], uri, f"{pointer}/{bound}")
                    if checked is not _MISSING:
                        out[key] = checked
            elif key == "discriminator" and isinstance(value, dict):
                if self._value(key, value, uri, at) is not _MISSING:  # bounded like any other value
                    out[key] = self._discriminator(value, uri, refs)
            elif key == "type" and value == "file":
                out["type"] = "string"
                out["format"] = "binary"
            elif key == "dependencies" and isinstance(value, dict):
                self._dependencies_keyword(value, uri, at, refs, depth, out)
            else:
                checked = self._value(key, value, uri, at)
                if checked is not _MISSING:
                    out[key] = checked
        if "exclusiveMinimum" in out and isinstance(schema.get("exclusiveMinimum"), bool):
            out.pop("minimum", None)
        if "exclusiveMaximum" in out and isinstance(schema.get("exclusiveMaximum"), bool):
            out.pop("maximum", None)
        self._required(schema, uri, pointer, removed, lifted, out)
        if "example" in schema and "examples" not in schema:
            example = self._value("examples", [schema["example"]], uri, f"{pointer}/example")
            if example is not _MISSING:
                out["examples"] = example
        if self._mode == "input" and out.get("format") == "binary" and out.get("type") == "string":
            del out["format"]
            out["contentEncoding"] = "base64"
            out.setdefault("description", BINARY_HINT)
        if self._openapi_30 and schema.get("nullable") is True:
            return _nullable(out)
        return out

    def checked(self, key: str, value: Any, uri: str, at: str) -> tuple[bool, Any]:
        """Whether a keyword value may go into a tool schema, and the value to write (maybe repaired);
        for values taken from outside a schema (a parameter's `example`)."""
        value = self._value(key, value, uri, at)
        return value is not _MISSING, value

    def _value(self, key: str, value: Any, uri: str, at: str) -> Any:
        """A keyword's value as 2020-12 takes it: as written, repaired, or _MISSING (dropped), told."""
        if keywords.depth_exceeds(value, self._limits.max_value_depth):
            self._warn(uri, at, f"`{key}` nests more than {self._limits.max_value_depth} levels of arrays and "
                       "objects; dropped")  # fmt: skip
            return _MISSING
        problem = keywords.problem(key, value)
        if problem is None:
            return value
        fixed = keywords.repaired(key, value)
        if fixed is not None and keywords.problem(key, fixed) is None:
            self._warn(uri, at, f"`{key}: {shown(value)}` is not valid JSON Schema ({problem}); read as {shown(fixed)}")
            return fixed
        self._warn(uri, at, f"`{key}: {shown(value)}` is not valid JSON Schema ({problem}); dropped")
        return _MISSING

    def _required(
        self, schema: JsonObject, uri: str, pointer: str, removed: set[str], lifted: list[str], out: JsonObject
    ) -> None:
        names: list[Any] = []
        if "required" in schema:
            written = schema["required"]
            if isinstance(written, list):  # names only: any other entry is reported (and dropped) by `_value`
                written = [name for name in written if not isinstance(name, str) or name not in removed]
            checked = self._value("required", written, uri, f"{pointer}/required") if written != [] else []
            if checked is not _MISSING:
                names = list(checked)
        names += [name for name in lifted if name not in names]
        if names:
            out["required"] = names

    def _convert_map(
        self,
        key: str,
        value: Mapping[Any, Any],
        uri: str,
        at: str,
        refs: set[str],
        depth: int,
        removed: set[str],
        lifted: list[str],
    ) -> JsonObject:
        converted: JsonObject = {}
        hidden = "readOnly" if self._mode == "input" else "writeOnly"
        for raw_name, raw_sub in value.items():
            sub = raw_sub
            name = raw_name if isinstance(raw_name, str) else str(raw_name)  # YAML reads `200:` as a number
            sub_at = f"{at}/{_escape(name)}"
            if key == "properties":
                if self.flag(sub, uri, hidden):
                    removed.add(name)
                    continue
                if isinstance(sub, dict) and isinstance(sub.get("required"), bool):
                    sub = self._property_required(name, sub, uri, sub_at, lifted)
            elif key == "patternProperties":
                problem = keywords.pattern_problem(name)
                if problem is not None:
                    self._warn(uri, sub_at, f"the pattern {shown(name)} does not compile ({problem}); dropped")
                    continue
            result = self._subschema(sub, uri, sub_at, refs, depth + 1, keep=key == "properties")
            if result is not None:
                converted[name] = result
        return converted

    def _property_required(self, name: str, sub: JsonObject, uri: str, at: str, lifted: list[str]) -> JsonObject:
        """`required: true` on a property (JSON Schema draft 3) means the object requires it."""
        if sub["required"]:
            lifted.append(name)
            self._warn(uri, f"{at}/required", "`required: true` on a property is not valid JSON Schema; read as "
                       "listing the property in the object's `required`")  # fmt: skip
        else:
            self._warn(uri, f"{at}/required", "`required: false` on a property is not valid JSON Schema; dropped "
                       "(a property is optional unless the object's `required` lists it)")  # fmt: skip
        return {k: v for k, v in sub.items() if k != "required"}

    def _convert_list(self, key: str, value: Any, uri: str, at: str, refs: set[str], depth: int) -> list[Any] | None:
        if isinstance(value, dict | bool):
            self._warn(uri, at, f"`{key}` must be a list of schemas; its one schema is read as a list of one")
            value = [value]
        if not isinstance(value, list):
            self._warn(uri, at, f"`{key}` must be a list of schemas, not {shown(value)}; dropped")
            return None
        converted = [self._subschema(v, uri, f"{at}/{i}", refs, depth + 1, keep=False) for i, v in enumerate(value)]
        kept = [c for c in converted if c is not None]
        if not kept:
            self._warn(uri, at, f"`{key}` must hold at least one schema; dropped")
            return None
        return kept

    def _tuple_items(self, value: list[Any], uri: str, at: str, refs: set[str], depth: int, out: JsonObject) -> None:
        """`items` as a list (the tuple form of older drafts, not valid in OpenAPI): one schema is what
        every item evidently is; several are read as a tuple (`prefixItems`)."""
        if len(value) == 1:
            self._warn(uri, at, "`items` is a list (the tuple form of older JSON Schema drafts); its one schema "
                       "is read as the schema of every item")  # fmt: skip
            converted = self._subschema(value[0], uri, f"{at}/0", refs, depth + 1, keep=False)
            if converted is not None:
                out["items"] = converted
            return
        self._warn(uri, at, "`items` is a list (the tuple form of older JSON Schema drafts); read as `prefixItems`")
        converted_list = self._convert_list("items", value, uri, at, refs, depth)
        if converted_list is not None:
            out["prefixItems"] = converted_list

    def _dependencies_keyword(
        self, value: Mapping[Any, Any], uri: str, at: str, refs: set[str], depth: int, out: JsonObject
    ) -> None:
        """Draft 7 `dependencies`: lists of names are 2020-12's `dependentRequired`, schemas its
        `dependentSchemas`."""
        required: JsonObject = {}
        schemas: JsonObject = {}
        for name, dependency in value.items():
            sub_at = f"{at}/{_escape(str(name))}"
            if isinstance(dependency, list):
                checked = self._value("required", dependency, uri, sub_at)
                if checked is not _MISSING:
                    required[str(name)] = checked
            else:
                converted = self._subschema(dependency, uri, sub_at, refs, depth + 1, keep=False)
                if converted is not None:
                    schemas[str(name)] = converted
        self._warn(uri, at, "`dependencies` (JSON Schema draft 7) read as `dependentRequired` and `dependentSchemas`")
        if required:
            out["dependentRequired"] = {**out.get("dependentRequired", {}), **required}
        if schemas:
            out["dependentSchemas"] = {**out.get("dependentSchemas", {}), **schemas}

    def _discriminator(self, value: Mapping[str, Any], uri: str, refs: set[str]) -> JsonObject:
        out = {k: v for k, v in value.items() if not (isinstance(k, str) and k.startswith("x-"))}
        mapping = value.get("mapping")
        if isinstance(mapping, dict):
            rewritten = {}
            for tag, target in mapping.items():
                if isinstance(target, str) and "#" in target:
                    rewritten[str(tag)] = self._reference(target, uri, refs)["$ref"]
                else:
                    rewritten[str(tag)] = target
            out["mapping"] = rewritten
        return out

    def _reference(self, reference: str, uri: str, refs: set[str]) -> JsonObject:
        file_part, _, fragment = reference.partition("#")
        target_uri = self._documents.absolute(uri, file_part)
        key = (target_uri, fragment)
        name = self._names.get(key)
        if name is None:
            target = pointer_get(self._documents.document(target_uri), fragment, target_uri)
            name = self._names[key] = self._new_name(fragment, target_uri)
            self._dependencies[name] = set()
            self.definitions[name] = True  # a placeholder until the work list converts it
            self._pending.append((name, target, target_uri, fragment))
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
        name = base
        if name in self._used_names:
            counter = self._next_suffix.get(base, 2)
            while (name := f"{base}_{counter}") in self._used_names:  # a name written so in the description
                counter += 1
            self._next_suffix[base] = counter + 1
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


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
