"""OpenAPI operations to catalog Operations: tool names, one input schema, bindings, hints.

The input schema merges path, query, header and cookie parameters and the
request body into one object:

- an object body (JSON, form or multipart) contributes its properties as
  arguments; any other body is a single `body` argument;
- body fields keep their names; a parameter whose name is already taken (by a
  body field or an earlier parameter) is renamed `<name>__<location>`, e.g.
  `id__path`. Parameters are taken in the order path, query, header, cookie.

An object body is flattened only when the tool schema can say everything its
schema says: an object-level constraint (`minProperties`, `dependentRequired`,
`patternProperties`, `if`...) would be lost among the parameters, so such a body
stays one `body` argument with its whole schema. The output schema promises
only what every success answer delivers: a JSON object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apimcp.catalog.media import media_kind
from apimcp.catalog.model import (
    BodyBinding,
    BodyKind,
    Operation,
    ParameterBinding,
    ParameterLocation,
    ParameterStyle,
    RestBinding,
    ToolHints,
)
from apimcp.catalog.naming import NameAllocator, snake_case
from apimcp.importers.cpu_budget import CpuBudget
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import DocumentSet, pointer_get
from apimcp.importers.openapi.schemas import BINARY_HINT, BundledBytes, JsonObject, SchemaConverter, SchemaLimits
from apimcp.importers.openapi.servers import ServerReader
from apimcp.importers.openapi.warnings import WarningLog
from apimcp.safety.schema_compiling import compile_problem

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOCATIONS: tuple[ParameterLocation, ...] = ("path", "query", "header", "cookie")
_DEFAULT_STYLE: dict[ParameterLocation, ParameterStyle] = {
    "path": "simple",
    "query": "form",
    "header": "simple",
    "cookie": "form",
}
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_SUCCESS_ORDER = ("200", "201", "202", "203", "206", "2XX", "2xx")
_NO_BODY = frozenset({"204", "205"})
"""Success statuses whose answers never carry a body (RFC 9110)."""


def _free_name(name: str, location: str, taken: Mapping[str, Any]) -> str:
    """A parameter's argument: its name, else `name__location` (a body field has its name), else that with a
    number: a body may have a field of that name too."""
    if name not in taken:
        return name
    argument, number = f"{name}__{location}", 2
    while argument in taken:
        argument, number = f"{name}__{location}_{number}", number + 1
    return argument


_BESIDE_A_REFERENCE = frozenset({"type", "properties", "required", "additionalProperties", "nullable"})
"""Keywords of a body's own beside its `$ref` that change what it accepts."""
_FLAT_BODY_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "title", "description", "example", "examples",
        "default", "deprecated", "readOnly", "writeOnly", "nullable", "xml", "externalDocs", "discriminator", "format",
        "$schema", "$id", "$comment", "$ref", "summary",
    }
)  # fmt: skip
"""What a flattened body's tool schema can still say (or what says nothing about the object's fields)."""


@dataclass(frozen=True, slots=True)
class _Parameter:
    name: str
    location: ParameterLocation
    required: bool
    schema: Any
    description: str | None
    style: ParameterStyle
    explode: bool
    allow_reserved: bool
    content_type: str | None
    deprecated: bool
    example: Any
    uri: str
    at: str
    """Where the parameter is, in the document at `uri`."""
    pointer: str
    """Where its schema is."""


@dataclass(frozen=True, slots=True)
class _Body:
    binding: BodyBinding
    additional: Any = False
    """What the tool schema says of arguments it does not name (the flattened body's additionalProperties)."""


_KIND_PREFERENCE: dict[BodyKind, int] = {"json": 0, "form": 1, "multipart": 2, "text": 3, "binary": 4}


class OperationBuilder:
    """Builds the Operations of one description."""

    def __init__(
        self,
        documents: DocumentSet,
        *,
        openapi_30: bool,
        prefix: str = "",
        source: str,
        log: WarningLog,
        limits: SchemaLimits | None = None,
        budget: CpuBudget | None = None,
        servers: ServerReader | None = None,
    ) -> None:
        """`servers`: how the operations' own `servers` are read (default: as a description with no URL's)."""
        self._documents = documents
        self._openapi_30 = openapi_30
        self._servers = servers or ServerReader(None, source, log)
        self._log = log
        self._budget = budget or CpuBudget((limits or SchemaLimits()).max_cpu_seconds, source)
        bundled = BundledBytes((limits or SchemaLimits()).max_bundled_bytes, source)
        self._inputs = SchemaConverter(
            documents, openapi_30=openapi_30, mode="input", log=log, limits=limits, budget=self._budget, bundled=bundled
        )
        self._outputs = SchemaConverter(
            documents, openapi_30=openapi_30, mode="output", log=log, limits=limits, budget=self._budget,
            bundled=bundled,
        )  # fmt: skip
        self._names = NameAllocator(prefix)
        self._source = source

    def build(self, document: Mapping[str, Any]) -> list[Operation]:
        paths = document.get("paths") or {}
        if not isinstance(paths, dict):
            raise SpecError('"paths" must be an object', source=self._source, pointer="/paths")
        operations = []
        uri = self._documents.main_uri
        for path, raw_item in paths.items():
            if isinstance(path, str) and path.startswith("x-"):
                continue  # a specification extension, not a path
            at = "/paths/" + _escape(str(path))
            if not isinstance(path, str) or not path.startswith("/"):
                raise SpecError(_unrooted(path), source=self._source, pointer=at)
            item, item_uri, item_at = self._deref(raw_item, uri, at)
            if not isinstance(item, dict):
                raise SpecError("a path item must be an object", source=self._source, pointer=at)
            for method in HTTP_METHODS:
                operation = item.get(method)
                if operation is None:
                    continue
                if not isinstance(operation, dict):
                    raise SpecError("an operation must be an object", source=self._source, pointer=f"{at}/{method}")
                self._budget.check()
                self._log.operation = f"{method.upper()} {path}"
                built = self._operation(path, method, item, operation, item_uri, f"{item_at}/{method}")
                if built is not None:
                    operations.append(built)
        self._log.operation = None
        return operations

    # --- one operation -------------------------------------------------------------------------

    def _operation(
        self, path: str, method: str, item: Mapping[str, Any], operation: Mapping[str, Any], uri: str, at: str
    ) -> Operation | None:
        operation_id = operation.get("operationId")
        operation_id = operation_id if isinstance(operation_id, str) and operation_id else None
        signature = f"{method.upper()} {path}"

        parameters = self._parameters(item, operation, uri, at)
        properties: JsonObject = {}
        required: list[str] = []
        references: set[str] = set()
        body = self._body(operation, uri, at, properties, required, references)
        bindings: list[ParameterBinding] = []
        for parameter in sorted(parameters, key=lambda p: _LOCATIONS.index(p.location)):
            argument = _free_name(parameter.name, parameter.location, properties)
            properties[argument] = self._parameter_schema(parameter, references)
            if parameter.required:
                required.append(argument)
            bindings.append(
                ParameterBinding(
                    argument=argument,
                    name=parameter.name,
                    location=parameter.location,
                    style=parameter.style,
                    explode=parameter.explode,
                    allow_reserved=parameter.allow_reserved,
                    content_type=parameter.content_type,
                )
            )
        schema: JsonObject = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        additional = body.additional if body is not None else False
        if additional is not True:
            schema["additionalProperties"] = additional
        input_schema = self._inputs.bundle(schema, references)
        problem = compile_problem(input_schema)
        if problem is not None:  # not expected: every keyword was checked; still never served broken
            self._log.add(self._documents.main_uri, at, f"the tool's input schema is not valid JSON Schema 2020-12 "
                          f"({problem}); the operation is left out")  # fmt: skip
            return None

        summary = _text(operation.get("summary"))
        description = _text(operation.get("description"))
        if summary and description:
            full_description = description if description.startswith(summary) else f"{summary}\n\n{description}"
        else:
            full_description = summary or description or ""
        deprecated = operation.get("deprecated") is True
        if deprecated:
            full_description = ("Deprecated. " + full_description).strip()
        raw_tags = operation.get("tags")
        tags = tuple(t for t in raw_tags if isinstance(t, str)) if isinstance(raw_tags, list) else ()
        output_schema, accept = self._response(method, operation, uri, at)
        if output_schema is not None and (problem := compile_problem(output_schema)) is not None:
            self._log.add(self._documents.main_uri, f"{at}/responses", "the tool's output schema is not valid JSON "
                          f"Schema 2020-12 ({problem}); the tool has none")  # fmt: skip
            output_schema = None
        return Operation(
            tool_name=self._names.allocate(snake_case(operation_id or f"{method} {path}"), signature),
            input_schema=input_schema,
            binding=RestBinding(
                method=method.upper(),
                path=path,
                parameters=tuple(bindings),
                body=body.binding if body is not None else None,
                accept=accept,
                servers=self._servers.read(operation.get("servers"), f"{at}/servers")
                or self._servers.read(item.get("servers"), f"{at.rsplit('/', 1)[0]}/servers"),
            ),
            title=summary,
            description=full_description or None,
            output_schema=output_schema,
            hints=_hints(method),
            operation_id=operation_id,
            tags=tags,
            deprecated=deprecated,
        )

    def _parameters(self, item: Mapping[str, Any], operation: Mapping[str, Any], uri: str, at: str) -> list[_Parameter]:
        """Path-item parameters overridden by operation parameters of the same name and location."""
        merged: dict[tuple[str, str], _Parameter] = {}
        item_at = at.rsplit("/", 1)[0]
        for owner, owner_at in ((item, item_at), (operation, at)):
            raw_list = owner.get("parameters") or []
            if not isinstance(raw_list, list):
                raise SpecError('"parameters" must be a list', source=self._source, pointer=f"{owner_at}/parameters")
            for index, raw in enumerate(raw_list):
                parameter = self._parameter(raw, uri, f"{owner_at}/parameters/{index}")
                if parameter is not None:
                    merged[(parameter.name, parameter.location)] = parameter
        return list(merged.values())

    def _parameter(self, raw: Any, uri: str, at: str) -> _Parameter | None:
        parameter, parameter_uri, parameter_at = self._deref(raw, uri, at)
        if not isinstance(parameter, dict):
            raise SpecError("a parameter must be an object", source=self._source, pointer=at)
        name, location = parameter.get("name"), parameter.get("in")
        if not isinstance(name, str) or location not in _LOCATIONS:
            raise SpecError('a parameter needs a "name" and an "in" of path, query, header or cookie',
                            source=self._source, pointer=at)  # fmt: skip
        if location == "header" and name.lower() in _IGNORED_HEADERS:
            return None  # OpenAPI: these are governed by content negotiation and security, not parameters
        schema: Any = parameter.get("schema")
        schema_at = f"{parameter_at}/schema"
        content_type = None
        content = self._media_types(parameter.get("content"), parameter_uri, f"{parameter_at}/content")
        if schema is None and content:
            content_type, media = next(iter(content.items()))
            schema = media.get("schema") if isinstance(media, dict) else None
            schema_at = f"{parameter_at}/content/{_escape(str(content_type))}/schema"
        style = parameter.get("style", _DEFAULT_STYLE[location])
        if style not in ("matrix", "label", "simple", "form", "spaceDelimited", "pipeDelimited", "deepObject"):
            raise SpecError(f"unknown parameter style {style!r}", source=self._source, pointer=at)
        explode = parameter.get("explode", style == "form")
        return _Parameter(
            name=name,
            location=location,
            required=location == "path" or parameter.get("required") is True,
            schema=schema if schema is not None else {"type": "string"},
            description=_text(parameter.get("description")),
            style=style,
            explode=explode is True,
            allow_reserved=parameter.get("allowReserved") is True,
            content_type=content_type,
            deprecated=parameter.get("deprecated") is True,
            example=parameter.get("example"),
            uri=parameter_uri,
            at=parameter_at,
            pointer=schema_at,
        )

    def _parameter_schema(self, parameter: _Parameter, references: set[str]) -> Any:
        converted, refs = self._inputs.convert(parameter.schema, parameter.uri, parameter.pointer)
        references |= refs
        if not isinstance(converted, dict):
            return converted
        extra: JsonObject = {}
        if parameter.description and "description" not in converted:
            extra["description"] = parameter.description
        if parameter.deprecated:
            extra["deprecated"] = True
        if parameter.example is not None and "examples" not in converted:
            at = f"{parameter.at}/example"
            kept, examples = self._inputs.checked("examples", [parameter.example], parameter.uri, at)
            if kept:
                extra["examples"] = examples
        return {**converted, **extra} if extra else converted

    def _body(
        self,
        operation: Mapping[str, Any],
        uri: str,
        at: str,
        properties: JsonObject,
        required: list[str],
        references: set[str],
    ) -> _Body | None:
        raw = operation.get("requestBody")
        if raw is None:
            return None
        request_body, body_uri, body_at = self._deref(raw, uri, f"{at}/requestBody")
        content = self._media_types(
            request_body.get("content") if isinstance(request_body, dict) else None, body_uri, f"{body_at}/content"
        )
        if not content:
            return None
        media_type = min(content, key=lambda m: _KIND_PREFERENCE[media_kind(m)])
        media = content[media_type] if isinstance(content[media_type], dict) else {}
        kind = media_kind(media_type)
        schema = media.get("schema")
        schema_at = f"{body_at}/content/{_escape(media_type)}/schema"
        body_required = request_body.get("required") is True
        description = _text(request_body.get("description"))
        if kind in ("json", "form", "multipart") and schema is not None and self._inputs.is_object(schema, body_uri):
            return self._object_body(schema, body_uri, schema_at, media_type, media, body_required, description,
                                     properties, required, references)  # fmt: skip
        if kind in ("text", "binary") or schema is None:
            body_schema: JsonObject = {"type": "string"}
            if kind == "binary":
                body_schema = {"type": "string", "contentEncoding": "base64", "description": BINARY_HINT}
            elif description:
                body_schema["description"] = description
        else:
            converted_body, refs = self._inputs.convert(schema, body_uri, schema_at)
            references |= refs
            body_schema = converted_body if isinstance(converted_body, dict) else {}
            if description and "description" not in body_schema:
                body_schema = {**body_schema, "description": description}
        properties["body"] = body_schema
        if body_required:
            required.append("body")
        return _Body(BodyBinding(media_type=media_type, kind=kind, argument="body", required=body_required))

    def _object_body(
        self,
        schema: Any,
        uri: str,
        at: str,
        media_type: str,
        media: Mapping[str, Any],
        body_required: bool,
        description: str | None,
        properties: JsonObject,
        required: list[str],
        references: set[str],
    ) -> _Body:
        """An object body: its fields become arguments, unless its schema says more than the tool schema can
        (then it is one `body` argument)."""
        kind = media_kind(media_type)
        raw_schema, schema_uri, schema_at = self._inputs.resolve(schema, uri, at)
        beside = self._beside_reference(schema)
        if beside:  # 3.1 applies what is written beside a `$ref`: the body is the schema as written, whole
            converted, refs = self._inputs.convert(schema, uri, at)
        else:
            converted, refs = self._inputs.convert(raw_schema, schema_uri, schema_at)
        references |= refs
        fields = dict(converted.get("properties", {}))
        additional = converted.get("additionalProperties", False)  # extra fields only when the body says so
        for name in () if beside else converted.get("required", ()):  # beside a `$ref`: its target may describe it
            if name not in fields:  # required but undescribed: still the tool must let it be given
                fields[name] = additional if isinstance(additional, dict) else {}
                taking = "values `additionalProperties` describes" if isinstance(additional, dict) else "any value"
                self._log.add(schema_uri, f"{schema_at}/required", f"body property {name!r} is required but not "
                              f"described in `properties`; it is offered as an argument taking {taking}")  # fmt: skip
        file_schema = {"type": "string", "contentEncoding": "base64", "description": BINARY_HINT}
        binary: set[str] = set()
        raw_properties = raw_schema.get("properties")
        for name, sub in (raw_properties if isinstance(raw_properties, dict) else {}).items():
            if kind == "json" or name not in fields:
                continue
            if self._inputs.is_binary(sub, schema_uri):
                binary.add(name)
                fields[name] = file_schema
            elif self._inputs.is_binary_array(sub, schema_uri):  # several files under one name
                binary.add(name)
                fields[name] = {"type": "array", "items": file_schema}
        raw_encoding = media.get("encoding")
        encoding: dict[str, Any] = raw_encoding if isinstance(raw_encoding, dict) else {}
        part_types = {
            name: spec["contentType"].split(",")[0].strip()
            for name, spec in encoding.items()
            if isinstance(spec, dict) and isinstance(spec.get("contentType"), str) and name in fields
        }
        # A body that may be null (its conversion is an `anyOf`, whose fields no flat argument list can hold), or
        # one with keywords beside its `$ref`, stays one argument.
        if beside or "properties" not in converted or not self._flattens(schema, uri):
            body_schema = (
                {**converted, "properties": fields} if fields and "properties" in converted else dict(converted)
            )
            if description and "description" not in body_schema:
                body_schema["description"] = description
            properties["body"] = body_schema
            if body_required:
                required.append("body")
            binding = BodyBinding(media_type=media_type, kind=kind, argument="body", binary_fields=frozenset(binary),
                                  field_media_types=part_types, required=body_required)  # fmt: skip
            return _Body(binding)
        properties.update(fields)
        if body_required:
            required.extend(n for n in converted.get("required", ()) if n in fields)
        binding = BodyBinding(
            media_type=media_type,
            kind=kind,
            argument=None,
            fields=tuple(fields),
            field_media_types=part_types,
            extra_fields=additional is not False,
            binary_fields=frozenset(binary),
            required=body_required,
        )
        return _Body(binding, additional)

    def _beside_reference(self, schema: Any) -> bool:
        """Whether a 3.1 body schema says something beside its `$ref` that the target does not (3.0 ignores it)."""
        return (
            not self._openapi_30
            and isinstance(schema, dict)
            and "$ref" in schema
            and any(key in _BESIDE_A_REFERENCE for key in schema)
        )

    def _flattens(self, schema: Any, uri: str) -> bool:
        """Whether every keyword of an object body (and of the references leading to it) survives
        flattening: the tool schema mixes its fields with parameters, so object-level constraints
        (`minProperties`, `dependentRequired`, `patternProperties`, `propertyNames`, `if`...) would be lost."""
        seen: set[tuple[str, str]] = set()
        while isinstance(schema, dict):
            if any(isinstance(k, str) and not k.startswith("x-") and k not in _FLAT_BODY_KEYWORDS for k in schema):
                return False
            reference = schema.get("$ref")
            if not isinstance(reference, str) or (uri, reference) in seen:
                return True
            seen.add((uri, reference))
            file_part, _, fragment = reference.partition("#")
            uri = self._documents.absolute(uri, file_part)
            schema = pointer_get(self._documents.document(uri), fragment, uri)
        return True

    def _response(
        self, method: str, operation: Mapping[str, Any], uri: str, at: str
    ) -> tuple[JsonObject | None, tuple[str, ...]]:
        """The output schema and the response media types.

        A tool with an output schema must answer structured content (a JSON object) on every success,
        so there is one only when every success response the operation declares is a JSON object: a
        204 or 205 (no body, whatever it declares), a success declared without content, a HEAD
        request or another media type means the tool may answer without one. Several different object
        schemas become an `anyOf` of them.
        """
        raw_responses = operation.get("responses")
        if not isinstance(raw_responses, dict):
            return None, ()
        responses = {str(code): response for code, response in raw_responses.items()}  # YAML reads 200 as int
        codes = [c for c in _SUCCESS_ORDER if c in responses]
        codes += [c for c in responses if c.startswith("2") and c not in codes]
        accept: list[str] = []
        bodies: list[tuple[Any, str, str]] = []
        promise = method != "head"  # HEAD answers carry no body
        for code in codes:
            response, response_uri, response_at = self._deref(responses[code], uri, f"{at}/responses/{code}")
            content = self._media_types(
                response.get("content") if isinstance(response, dict) else None, response_uri, f"{response_at}/content"
            )
            declared = bool(content)
            if code in _NO_BODY:
                if declared:
                    self._log.add(response_uri, f"{response_at}/content",
                                  f"a {code} response has no body; the content it declares is ignored")  # fmt: skip
                promise = False
                continue
            if not content:
                promise = False  # this success answers without a body
                continue
            accept.extend(m for m in content if m not in accept)
            media_type = next((m for m in content if media_kind(m) == "json"), None)
            media = content.get(media_type) if media_type is not None else None
            schema = media.get("schema") if isinstance(media, dict) else None
            if schema is None or any(media_kind(m) != "json" for m in content):
                promise = False
                continue
            bodies.append((schema, response_uri, f"{response_at}/content/{_escape(str(media_type))}/schema"))
        if not promise or not bodies:
            return None, tuple(accept)
        objects: dict[bytes, tuple[JsonObject, set[str]]] = {}
        for schema, schema_uri, schema_at in bodies:
            if not self._outputs.is_object(schema, schema_uri):
                return None, tuple(accept)  # an array or a scalar is no structured content
            converted, refs = self._outputs.convert(schema, schema_uri, schema_at)
            converted, refs = self._outputs.inline_root(converted, refs)
            if "type" not in converted:
                converted = {"type": "object", **converted}
            if converted["type"] != "object":  # a nullable root: null is no structured content either
                return None, tuple(accept)
            objects.setdefault(orjson.dumps(converted, option=orjson.OPT_SORT_KEYS), (converted, refs))
        if len(objects) == 1:
            ((only, references),) = objects.values()
            return self._outputs.bundle(only, references), tuple(accept)
        union: set[str] = set().union(*(refs for _, refs in objects.values()))
        either = {"type": "object", "anyOf": [converted for converted, _ in objects.values()]}
        return self._outputs.bundle(either, union), tuple(accept)

    def _media_types(self, content: Any, uri: str, at: str) -> dict[str, Any]:
        """A `content` map keeping only media types written as strings; any other key is reported and left out."""
        if not isinstance(content, dict):
            return {}
        kept = {media_type: media for media_type, media in content.items() if isinstance(media_type, str)}
        if len(kept) != len(content):
            self._log.add(uri, at, "a media type that is not a string is left out")
        return kept

    def _deref(self, value: Any, uri: str, at: str) -> tuple[Any, str, str]:
        """Follow a `$ref` to a component (parameter, request body, response, path item): the component,
        its document and its pointer there."""
        seen: set[tuple[str, str]] = set()
        while isinstance(value, dict) and isinstance(value.get("$ref"), str):
            file_part, _, fragment = value["$ref"].partition("#")
            uri = self._documents.absolute(uri, file_part)
            if (uri, fragment) in seen:
                raise SpecError("a reference cycle names nothing", source=self._source, pointer=at)
            seen.add((uri, fragment))
            value = pointer_get(self._documents.document(uri), fragment, uri)
            at = fragment
        return value, uri, at


def _hints(method: str) -> ToolHints:
    if method in ("get", "head", "options", "trace"):
        return ToolHints(read_only=True, destructive=False, idempotent=True)
    if method == "delete":
        return ToolHints(read_only=False, destructive=True, idempotent=True)
    if method == "put":
        return ToolHints(read_only=False, idempotent=True)
    if method == "post":
        return ToolHints(read_only=False, destructive=False, idempotent=False)
    return ToolHints(read_only=False)


def _unrooted(path: object) -> str:
    """Why a path that does not begin with `/` is refused (OpenAPI and Swagger 2.0 both say it must): the server's
    URL and the path are joined as text, so `@host/x`, `.example/x` or `:8443/x` would send the plan's credentials
    to another host or port."""
    return (
        f"the path {path!r} does not begin with '/', as a path must: appended to the server's URL it would "
        "change the host calls go to"
    )


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")
