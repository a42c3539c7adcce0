"""JSON Schemas of protobuf messages, following the proto3 JSON mapping.

Property names are json names (lowerCamel); 64-bit integers are strings of
digits (integers accepted too); enums are value names; bytes are base64; maps
are objects; a oneof's fields are properties of which at most one may be set;
well-known types take their JSON forms (Timestamp is an RFC 3339 string...).
Messages are shared through `$defs`, which lets recursive messages refer to
themselves.

Output schemas describe what the backend returns (`json_format.MessageToDict`):
there enums may also be numbers (values unknown to this descriptor) and nothing
is required.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from apimcp.importers.protobuf.descriptors import SourceIndex

DIALECT = "https://json-schema.org/draft/2020-12/schema"

_INT64 = {"type": ["string", "integer"], "pattern": r"^-?[0-9]+$", "minimum": -(2**63), "maximum": 2**63 - 1}
_UINT64 = {"type": ["string", "integer"], "pattern": r"^[0-9]+$", "minimum": 0, "maximum": 2**64 - 1}
_INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
_UINT32 = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
_FLOAT = {"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}
_BYTES = {"type": "string", "contentEncoding": "base64"}

_T = FieldDescriptor
_SCALARS: dict[int, dict[str, Any]] = {
    _T.TYPE_INT32: _INT32,
    _T.TYPE_SINT32: _INT32,
    _T.TYPE_SFIXED32: _INT32,
    _T.TYPE_UINT32: _UINT32,
    _T.TYPE_FIXED32: _UINT32,
    _T.TYPE_INT64: _INT64,
    _T.TYPE_SINT64: _INT64,
    _T.TYPE_SFIXED64: _INT64,
    _T.TYPE_UINT64: _UINT64,
    _T.TYPE_FIXED64: _UINT64,
    _T.TYPE_FLOAT: _FLOAT,
    _T.TYPE_DOUBLE: _FLOAT,
    _T.TYPE_BOOL: {"type": "boolean"},
    _T.TYPE_STRING: {"type": "string"},
    _T.TYPE_BYTES: _BYTES,
}

_MAP_KEYS: dict[int, dict[str, Any]] = {
    **{t: {"pattern": r"^-?[0-9]+$"} for t in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32)},
    **{t: {"pattern": r"^-?[0-9]+$"} for t in (_T.TYPE_INT64, _T.TYPE_SINT64, _T.TYPE_SFIXED64)},
    **{t: {"pattern": r"^[0-9]+$"} for t in (_T.TYPE_UINT32, _T.TYPE_FIXED32, _T.TYPE_UINT64, _T.TYPE_FIXED64)},
    _T.TYPE_BOOL: {"enum": ["true", "false"]},
}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in schema:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return {**schema, "type": [*kinds, "null"]}


_WRAPPERS: dict[str, dict[str, Any]] = {
    "DoubleValue": _FLOAT,
    "FloatValue": _FLOAT,
    "Int64Value": _INT64,
    "UInt64Value": _UINT64,
    "Int32Value": _INT32,
    "UInt32Value": _UINT32,
    "BoolValue": {"type": "boolean"},
    "StringValue": {"type": "string"},
    "BytesValue": _BYTES,
}

WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {
        "type": "string",
        "format": "date-time",
        "description": "An RFC 3339 date and time in UTC, e.g. 2024-05-01T12:00:00Z.",
    },
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$",
        "description": "A duration in seconds with an 's' suffix, e.g. 1.5s.",
    },
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.FieldMask": {
        "type": "string",
        "description": "Comma-separated field paths in lowerCamel case, e.g. title,price.units.",
    },
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string", "description": "type.googleapis.com/ followed by a full type name"}},
        "required": ["@type"],
    },
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    **{f"google.protobuf.{name}": _nullable(schema) for name, schema in _WRAPPERS.items()},
}


class SchemaBuilder:
    """Builds schemas of messages of one pool; message schemas are shared in `defs`."""

    def __init__(self, index: SourceIndex, *, output: bool = False) -> None:
        self._index = index
        self._output = output
        self.defs: dict[str, dict[str, Any]] = {}

    def document(self, schema: dict[str, Any]) -> dict[str, Any]:
        """`schema` as a standalone document, carrying every definition it (transitively) refers to."""
        document = {"$schema": DIALECT, **schema}
        if self.defs:
            document["$defs"] = dict(sorted(self.defs.items()))
        return document

    def message(self, message: Descriptor) -> dict[str, Any]:
        """The schema of one message (an object), built inline."""
        special = WELL_KNOWN.get(message.full_name)
        if special is not None:
            return dict(special)
        properties: dict[str, Any] = {}
        required: list[str] = []
        exclusive: dict[str, Any] = {}
        for item in message.fields:
            schema = self.field(item)
            notes: list[str] = []
            group = item.containing_oneof
            if group is not None and f"{message.full_name}.{item.name}" not in self._index.proto3_optional:
                others = [f.json_name for f in group.fields if f is not item]
                notes.append(f"One of the group '{group.name}': set at most one of {', '.join(_names(group.fields))}.")
                exclusive[item.json_name] = {"properties": dict.fromkeys(others, False)}
            if not self._output and (item.is_required or f"{message.full_name}.{item.name}" in self._index.required):
                required.append(item.json_name)
            if item.GetOptions().deprecated:
                notes.append("Deprecated.")
            _describe(schema, self._index.comments.get(f"{message.full_name}.{item.name}"), notes)
            properties[item.json_name] = schema
        result: dict[str, Any] = {"type": "object"}
        description = self._index.comments.get(message.full_name)
        if description:
            result["description"] = description
        result["properties"] = properties
        if required:
            result["required"] = required
        if exclusive:
            result["dependentSchemas"] = exclusive
        result["additionalProperties"] = False
        return result

    def field(self, item: FieldDescriptor) -> dict[str, Any]:
        entry = item.message_type
        if item.is_repeated and entry is not None and entry.GetOptions().map_entry:
            key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
            schema: dict[str, Any] = {"type": "object", "additionalProperties": self._single(value)}
            if key.type in _MAP_KEYS:
                schema["propertyNames"] = _MAP_KEYS[key.type]
            return schema
        single = self._single(item)
        return {"type": "array", "items": single} if item.is_repeated else single

    def _single(self, item: FieldDescriptor) -> dict[str, Any]:
        if item.message_type is not None:
            return self.reference(item.message_type)
        if item.enum_type is not None:
            return self._enum(item.enum_type)
        return dict(_SCALARS[item.type])

    def reference(self, message: Descriptor) -> dict[str, Any]:
        """A `$ref` to the message's definition (well-known types inline)."""
        if message.full_name in WELL_KNOWN:
            return dict(WELL_KNOWN[message.full_name])
        name = message.full_name
        if name not in self.defs:
            self.defs[name] = {}  # a placeholder first: recursive messages refer to themselves
            self.defs[name] = self.message(message)
        return {"$ref": f"#/$defs/{name}"}

    def _enum(self, enum: EnumDescriptor) -> dict[str, Any]:
        if enum.full_name == "google.protobuf.NullValue":
            return {"type": "null"}
        names = [value.name for value in enum.values]
        schema: dict[str, Any] = {"type": "string", "enum": names}
        if self._output:
            schema = {"anyOf": [schema, {"type": "integer"}]}
        lines = [self._index.comments.get(enum.full_name, "")]
        for value in enum.values:
            comment = self._index.comments.get(f"{enum.full_name}.{value.name}")
            if comment:
                lines.append(f"- {value.name}: {' '.join(comment.split())}")
        description = "\n".join(line for line in lines if line).strip()
        if description:
            schema["description"] = description
        return schema


def _names(fields: Any) -> list[str]:
    return [f.json_name for f in fields]


def _describe(schema: dict[str, Any], comment: str | None, notes: list[str]) -> None:
    text = "\n".join(part for part in (comment, " ".join(notes)) if part)
    if not text:
        return
    if "$ref" in schema:
        # Siblings of $ref are honoured in 2020-12; the description says what this field means.
        schema["description"] = text
    else:
        existing = schema.get("description")
        schema["description"] = f"{text}\n{existing}" if existing else text
