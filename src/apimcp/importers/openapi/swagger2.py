"""Swagger / OpenAPI 2.0 to OpenAPI 3.0.3, so that the rest of the importer only reads 3.x.

`convert_swagger2` is a pure function of an already parsed document. It never mutates its input and
shares whatever it does not need to change (schemas without anything to rewrite, `info`, `tags`,
examples, security requirements), so converting a large description costs little memory.

Mapping, in short:

- `host` + `basePath` + `schemes` become `servers`; an operation's own `schemes` become its `servers`. A `host`
  that is not a name or IP address with an optional port, and a `basePath` not beginning with `/`, are refused:
  either would change the host calls go to. Schemes other than http and https (ws, wss) are left out with a
  warning, and refused where they are the only ones: no call could use such a server.
- `definitions`, `parameters`, `responses` and `securityDefinitions` become `components`; global `body`
  and `formData` parameters become `components.requestBodies`.
- `consumes` / `produces` become the media types of request bodies and responses.
- `collectionFormat` becomes `style` / `explode` (or a form field's `encoding`).
- Every `$ref` to `#/definitions/`, `#/parameters/` or `#/responses/` is rewritten, in this file or another,
  wherever a schema may hold one (tuple-form `items` lists included).
- `items` written as a list (the tuple form of older JSON Schema drafts, which 2.0 does not allow) is
  repaired: one schema is the schema of every item, several become `prefixItems`; `warn` is told.

Schemas nested deeper than MAX_DEPTH are passed on unconverted: the schema converter, whose own
bound is lower, never reads them, and a hostile description cannot exhaust the stack here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from apimcp.importers.errors import SpecError

__all__ = ["convert_swagger2"]

OPENAPI_VERSION = "3.0.3"
DEFAULT_MEDIA_TYPE = "application/json"
FORM_URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"

MAX_DEPTH = 160
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
_LOCATIONS = ("query", "header", "path", "formData", "body")
_BODY_LOCATIONS = ("body", "formData")

# Keywords of a 2.0 non-body parameter, header or items object that describe its value.
_SIMPLE_SCHEMA_KEYWORDS = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)
_SCHEMA_KEYWORD_SET = frozenset((*_SIMPLE_SCHEMA_KEYWORDS, "collectionFormat", "x-nullable"))

# collectionFormat -> (style, explode) for query parameters and urlencoded form fields.
_QUERY_STYLES: dict[str, tuple[str, bool]] = {
    "csv": ("form", False),
    "ssv": ("spaceDelimited", False),
    "pipes": ("pipeDelimited", False),
    "multi": ("form", True),
}

_OAUTH2_FLOWS = {
    "implicit": ("implicit", ("authorizationUrl",)),
    "password": ("password", ("tokenUrl",)),
    "application": ("clientCredentials", ("tokenUrl",)),
    "accessCode": ("authorizationCode", ("authorizationUrl", "tokenUrl")),
}


Warn = Callable[[str, str], None]
"""Told what was repaired: the JSON pointer in the 2.0 document, and what was done."""


def convert_swagger2(
    document: Mapping[str, Any], *, source: str | None = None, warn: Warn | None = None
) -> dict[str, Any]:
    """Convert a parsed Swagger 2.0 document into an equivalent OpenAPI 3.0.3 document.

    Raises SpecError (with a JSON pointer) when the document is not a usable Swagger 2.0 description.
    """
    if not isinstance(document, Mapping):
        raise SpecError("a Swagger 2.0 document must be an object", source=source, pointer="")
    version = document.get("swagger")
    # `swagger: 2.0` unquoted in YAML parses as a float; it still means 2.0.
    if not (version == "2.0" or (isinstance(version, float) and version == 2.0)):
        raise SpecError(f"expected swagger: '2.0', found {version!r}", source=source, pointer="/swagger")
    return _Converter(document, source, warn or (lambda pointer, problem: None)).convert()


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{{1,5}}))?")
"""What Swagger 2.0's `host` may be: a name (an IPv4 address is one) or a bracketed IPv6 address, and a port."""


_CALLABLE_SCHEMES = ("http", "https")
"""Of Swagger 2.0's schemes (http, https, ws, wss), those the REST backend calls."""


def _is_host(host: str) -> bool:
    found = _HOST.fullmatch(host)
    return found is not None and (found.group(1) is None or 0 < int(found.group(1)) <= 65535)


def _escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return unquote(token).replace("~1", "/").replace("~0", "~")


def _extensions(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if isinstance(key, str) and key.startswith("x-")}


def _with_note(description: Any, note: str) -> str:
    if isinstance(description, str) and description:
        return f"{description}\n\n{note}"
    return note


def _unsupported_format_note(collection_format: Any) -> str:
    return (
        f"Note: collectionFormat {collection_format!r} cannot be expressed in OpenAPI 3.0; "
        "values are sent comma-separated."
    )


@dataclass(frozen=True, slots=True)
class _Param:
    """One entry of a 2.0 parameter list, with a local `$ref` resolved to decide where it goes."""

    raw: Mapping[str, Any]
    """The entry as written (possibly a `$ref`)."""
    resolved: Mapping[str, Any]
    """The parameter itself (the referenced global parameter for a local `$ref`)."""
    location: str
    """`in`, or "" for a reference that cannot be resolved here (another file, a missing name)."""
    pointer: str
    ref_name: str | None = None
    """The global parameter's name when `raw` is a local `$ref`."""

    @property
    def key(self) -> tuple[str, str]:
        if self.location == "":
            return ("$ref", str(self.raw.get("$ref")))
        return (str(self.resolved.get("name")), self.location)


class _Converter:
    def __init__(self, document: Mapping[str, Any], source: str | None, warn: Warn) -> None:
        self.doc = document
        self.source = source
        self.warn = warn
        self.consumes = self._media_types(document.get("consumes"), "/consumes") or [DEFAULT_MEDIA_TYPE]
        self.produces = self._media_types(document.get("produces"), "/produces") or [DEFAULT_MEDIA_TYPE]
        self.global_params = self._mapping(document.get("parameters", {}), "/parameters")
        self.global_responses = self._mapping(document.get("responses", {}), "/responses")
        self.host = self._optional_string(document.get("host"), "/host")
        if self.host and not _is_host(self.host):
            raise self._error(f"host {self.host!r} is not a host name or IP address with an optional port, as it "
                              "must be (no scheme, user name or path: those go in schemes and basePath); in the "
                              "server's URL it would change the host calls go to", "/host")  # fmt: skip
        self.base_path = self._optional_string(document.get("basePath"), "/basePath")
        if self.base_path and not self.base_path.startswith("/"):
            raise self._error(f"basePath {self.base_path!r} does not begin with '/', as it must: after the host it "
                              "would change the host calls go to", "/basePath")  # fmt: skip
        self.schemes = self._callable_schemes(document.get("schemes"), "/schemes")

    # ----------------------------------------------------------------- errors and checks

    def _error(self, message: str, pointer: str) -> SpecError:
        return SpecError(message, source=self.source, pointer=pointer)

    def _mapping(self, value: Any, pointer: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self._error("expected an object", pointer)
        return value

    def _list(self, value: Any, pointer: str) -> list[Any]:
        if not isinstance(value, list):
            raise self._error("expected an array", pointer)
        return value

    def _optional_string(self, value: Any, pointer: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise self._error("expected a string", pointer)

    def _strings(self, value: Any, pointer: str) -> list[str] | None:
        if value is None:
            return None
        items = self._list(value, pointer)
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise self._error("expected a string", f"{pointer}/{index}")
        return items

    def _callable_schemes(self, value: Any, pointer: str) -> list[str] | None:
        """The `schemes` at `pointer` that calls can use (http, https), when they make the servers' URLs (with a
        `host`): others (ws, wss) are left out with a warning, and refused when none is left."""
        schemes = self._strings(value, pointer)
        if not schemes or not self.host:
            return schemes
        usable = [scheme.lower() for scheme in schemes if scheme.lower() in _CALLABLE_SCHEMES]
        unusable = ", ".join(scheme for scheme in schemes if scheme.lower() not in _CALLABLE_SCHEMES)
        if not usable:
            raise self._error(f"schemes names only {unusable}: tools call their API over http or https, so a "
                              "server needs one of those (or give the plan a backend URL and leave schemes out)",
                              pointer)  # fmt: skip
        if unusable:
            self.warn(pointer, f"schemes {unusable} left out: tools call their API over http or https only")
        return list(dict.fromkeys(usable))

    def _media_types(self, value: Any, pointer: str) -> list[str] | None:
        types = self._strings(value, pointer)
        # An empty list clears the document-level value; the default then applies.
        return types or None

    # ----------------------------------------------------------------- document

    def convert(self) -> dict[str, Any]:
        doc = self.doc
        out: dict[str, Any] = {"openapi": OPENAPI_VERSION}
        if "info" in doc:
            out["info"] = self._mapping(doc["info"], "/info")
        out["servers"] = self._servers(self.schemes)
        if "paths" not in doc:
            raise self._error("a Swagger 2.0 document must have paths", "/paths")
        out["paths"] = self._paths(self._mapping(doc["paths"], "/paths"))
        components = self._components()
        if components:
            out["components"] = components
        if "security" in doc:
            out["security"] = self._list(doc["security"], "/security")
        if "tags" in doc:
            out["tags"] = self._list(doc["tags"], "/tags")
        if "externalDocs" in doc:
            out["externalDocs"] = self._mapping(doc["externalDocs"], "/externalDocs")
        out.update(_extensions(doc))
        return out

    def _servers(self, schemes: list[str] | None) -> list[dict[str, Any]]:
        base_path = self.base_path or ""
        if not self.host:
            return [{"url": base_path or "/"}]
        return [{"url": f"{scheme}://{self.host}{base_path}"} for scheme in schemes or ["https"]]

    def _components(self) -> dict[str, Any]:
        doc = self.doc
        components: dict[str, Any] = {}
        if "definitions" in doc:
            definitions = self._mapping(doc["definitions"], "/definitions")
            schemas = {
                str(name): self._schema(schema, f"/definitions/{_escape(name)}") for name, schema in definitions.items()
            }
            if schemas:
                components["schemas"] = schemas
        parameters: dict[str, Any] = {}
        request_bodies: dict[str, Any] = {}
        for key, raw in self.global_params.items():
            name = str(key)
            pointer = f"/parameters/{_escape(name)}"
            param = self._mapping(raw, pointer)
            if "$ref" in param:
                parameters[name] = self._ref_object(param)
                continue
            location = self._location(param, pointer)
            entry = _Param(param, param, location, pointer)
            if location == "body":
                request_bodies[name] = self._body_request_body(entry, self.consumes)
            elif location == "formData":
                request_bodies[name] = self._form_request_body([entry], self.consumes)
            else:
                parameters[name] = self._parameter(param, location, pointer)
        if parameters:
            components["parameters"] = parameters
        if request_bodies:
            components["requestBodies"] = request_bodies
        responses = {
            str(name): self._response(response, f"/responses/{_escape(name)}", self.produces)
            for name, response in self.global_responses.items()
        }
        if responses:
            components["responses"] = responses
        if "securityDefinitions" in doc:
            definitions = self._mapping(doc["securityDefinitions"], "/securityDefinitions")
            schemes = {
                str(name): self._security_scheme(scheme, f"/securityDefinitions/{_escape(name)}")
                for name, scheme in definitions.items()
            }
            if schemes:
                components["securitySchemes"] = schemes
        return components

    # ----------------------------------------------------------------- references

    def _rewrite_ref(self, ref: str) -> str:
        """The 3.0 form of a 2.0 reference; the file part (if any) is kept."""
        file_part, hash_mark, fragment = ref.partition("#")
        if not hash_mark or not fragment.startswith("/"):
            return ref
        tokens = fragment[1:].split("/")
        section, rest = tokens[0], tokens[1:]
        if section == "definitions" and rest:
            return f"{file_part}#/components/schemas/{'/'.join(rest)}"
        if section == "responses" and rest:
            name, tail = rest[0], self._response_tail(rest[1:])
            return f"{file_part}#/components/responses/{'/'.join([name, *tail])}"
        if section == "parameters" and rest:
            name, tail = rest[0], rest[1:]
            found = self.global_params.get(_unescape(name)) if file_part == "" else None
            param: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            location = param.get("in")
            if location == "body":
                if tail and tail[0] == "schema":
                    tail = ["content", _escape(self.consumes[0]), *tail]
                return f"{file_part}#/components/requestBodies/{'/'.join([name, *tail])}"
            if location == "formData":
                if tail and tail[0] in _SCHEMA_KEYWORD_SET:
                    media_type = _escape(self._form_media_type([param], self.consumes))
                    tail = ["content", media_type, "schema", "properties", _escape(param.get("name")), *tail]
                return f"{file_part}#/components/requestBodies/{'/'.join([name, *tail])}"
            if tail and tail[0] in _SCHEMA_KEYWORD_SET:
                tail = ["schema", *tail]
            return f"{file_part}#/components/parameters/{'/'.join([name, *tail])}"
        return ref

    def _response_tail(self, tail: list[str]) -> list[str]:
        """Rewrite what follows `#/responses/<name>` in a pointer into a response's parts."""
        if not tail:
            return tail
        if tail[0] == "schema":
            return ["content", _escape(self.produces[0]), *tail]
        if tail[0] == "examples" and len(tail) > 1:
            return ["content", tail[1], "example", *tail[2:]]
        if tail[0] == "headers" and len(tail) > 2 and tail[2] in _SCHEMA_KEYWORD_SET:
            return [*tail[:2], "schema", *tail[2:]]
        return tail

    def _ref_object(self, obj: Mapping[str, Any]) -> Any:
        """A `{$ref: ...}` object with its reference rewritten (siblings are kept, as 3.0 ignores them too)."""
        ref = obj.get("$ref")
        if not isinstance(ref, str):
            return obj
        rewritten = self._rewrite_ref(ref)
        if rewritten == ref:
            return obj
        return {**obj, "$ref": rewritten}

    @staticmethod
    def _local_name(ref: Any, section: str) -> str | None:
        """`X` for a reference `#/<section>/X` in this document, else None."""
        if not isinstance(ref, str) or not ref.startswith(f"#/{section}/"):
            return None
        token = ref[len(section) + 3 :]
        if "/" in token:
            return None
        return _unescape(token)

    # ----------------------------------------------------------------- schemas

    def _schema(self, schema: Any, pointer: str, depth: int = 0) -> Any:
        """A 2.0 schema as a 3.0 schema; the same object when nothing in it needs to change."""
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return schema
        is_file = schema.get("type") == "file"
        changed = False
        items: list[tuple[str, Any]] = []
        nullable: bool | None = None
        for key, value in schema.items():
            new_value = value
            if key == "$ref":
                if isinstance(value, str):
                    new_value = self._rewrite_ref(value)
            elif key == "items" and isinstance(value, list):
                written, new_value = self._tuple_items(value, f"{pointer}/items", depth)
                changed = True
                if written:
                    items.append((written, new_value))
                continue
            elif key in ("items", "additionalProperties", "not"):
                if isinstance(value, Mapping):
                    new_value = self._schema(value, f"{pointer}/{key}", depth + 1)
            elif key in ("allOf", "anyOf", "oneOf"):
                if isinstance(value, list):
                    converted = [self._schema(sub, f"{pointer}/{key}/{i}", depth + 1) for i, sub in enumerate(value)]
                    if any(new is not old for new, old in zip(converted, value, strict=True)):
                        new_value = converted
            elif key == "properties":
                if isinstance(value, Mapping):
                    props = {
                        name: self._schema(sub, f"{pointer}/properties/{_escape(name)}", depth + 1)
                        for name, sub in value.items()
                    }
                    if any(props[name] is not sub for name, sub in value.items()):
                        new_value = props
            elif key == "x-nullable":
                nullable = bool(value)
                changed = True
                continue
            elif key == "type":
                if is_file:
                    items += [("type", "string"), ("format", "binary")]
                    changed = True
                    continue
                if isinstance(value, list):
                    # Not 2.0, but seen: ["string", "null"] means a nullable string in 3.0.
                    names = [name for name in value if name != "null"]
                    if len(names) == 1:
                        new_value = names[0]
                        if len(names) < len(value):
                            nullable = True
            elif key == "format" and is_file:
                continue  # type: file becomes format: binary
            elif key == "discriminator" and isinstance(value, str):
                new_value = {"propertyName": value}
            if new_value is not value:
                changed = True
            items.append((key, new_value))
        if not changed:
            return schema
        out = dict(items)
        if nullable is not None and "nullable" not in schema:
            if nullable and "$ref" in out:
                # 3.0 ignores the siblings of $ref, so nullable must wrap the reference.
                out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
            out["nullable"] = nullable
        return out

    def _tuple_items(self, value: list[Any], pointer: str, depth: int) -> tuple[str, Any]:
        """`items: [...]` (tuple form, not 2.0): the keyword and value to write instead ("" for none)."""
        converted = [self._schema(sub, f"{pointer}/{i}", depth + 1) for i, sub in enumerate(value)]
        if len(converted) == 1:
            self.warn(pointer, "`items` is a list (the tuple form of older JSON Schema drafts); its one schema is "
                      "read as the schema of every item")  # fmt: skip
            return "items", converted[0]
        if not converted:
            self.warn(pointer, "`items` is an empty list; dropped")
            return "", None
        self.warn(pointer, "`items` is a list (the tuple form of older JSON Schema drafts); read as `prefixItems`")
        return "prefixItems", converted

    def _simple_schema(self, obj: Mapping[str, Any], pointer: str) -> Any:
        """The schema of a 2.0 non-body parameter, header or form field, built from its keywords."""
        if "type" not in obj and isinstance(obj.get("schema"), Mapping):
            # Not 2.0, but seen: a non-body parameter written the 3.0 way.
            return self._schema(obj["schema"], f"{pointer}/schema")
        return self._schema(self._keywords(obj), pointer)

    def _keywords(self, obj: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
        """The value keywords of a parameter, header or items object, as a (2.0) schema."""
        schema: dict[str, Any] = {key: obj[key] for key in _SIMPLE_SCHEMA_KEYWORDS if key in obj}
        if isinstance(schema.get("items"), Mapping) and depth < MAX_DEPTH:
            items = schema["items"]
            # Items objects have no $ref in 2.0, but descriptions often use one.
            schema["items"] = {"$ref": items["$ref"]} if "$ref" in items else self._keywords(items, depth + 1)
        if "x-nullable" in obj:
            schema["x-nullable"] = obj["x-nullable"]
        return schema

    # ----------------------------------------------------------------- security schemes

    def _security_scheme(self, raw: Any, pointer: str) -> dict[str, Any]:
        scheme = self._mapping(raw, pointer)
        kind = scheme.get("type")
        out: dict[str, Any]
        if kind == "basic":
            out = {"type": "http", "scheme": "basic"}
        elif kind == "apiKey":
            out = {"type": "apiKey", "name": scheme.get("name"), "in": scheme.get("in")}
        elif kind == "oauth2":
            flow = scheme.get("flow")
            if not isinstance(flow, str) or flow not in _OAUTH2_FLOWS:
                raise self._error(f"unknown OAuth2 flow {flow!r}", f"{pointer}/flow")
            name, urls = _OAUTH2_FLOWS[flow]
            flow_object: dict[str, Any] = {url: scheme[url] for url in urls if url in scheme}
            scopes = self._mapping(scheme.get("scopes", {}), f"{pointer}/scopes")
            flow_object["scopes"] = {key: value for key, value in scopes.items() if not str(key).startswith("x-")}
            out = {"type": "oauth2", "flows": {name: flow_object}}
        else:
            raise self._error(f"unknown security scheme type {kind!r}", f"{pointer}/type")
        if "description" in scheme:
            out["description"] = scheme["description"]
        out.update(_extensions(scheme))
        return out

    # ----------------------------------------------------------------- paths and operations

    def _paths(self, paths: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for path, raw in paths.items():
            if isinstance(path, str) and path.startswith("x-"):
                out[path] = raw
                continue
            pointer = f"/paths/{_escape(path)}"
            out[path] = self._path_item(self._mapping(raw, pointer), pointer)
        return out

    def _path_item(self, item: Mapping[str, Any], pointer: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if "$ref" in item:
            ref = item["$ref"]
            out["$ref"] = self._rewrite_ref(ref) if isinstance(ref, str) else ref
        shared = self._params(item.get("parameters", []), f"{pointer}/parameters")
        for method in _METHODS:
            if method in item:
                op_pointer = f"{pointer}/{method}"
                out[method] = self._operation(self._mapping(item[method], op_pointer), op_pointer, shared)
        parameters = [self._parameter_entry(param) for param in shared if param.location not in _BODY_LOCATIONS]
        if parameters:
            out["parameters"] = parameters
        out.update(_extensions(item))
        return out

    def _params(self, raw: Any, pointer: str) -> list[_Param]:
        params: list[_Param] = []
        for index, entry in enumerate(self._list(raw, pointer)):
            entry_pointer = f"{pointer}/{index}"
            param = self._mapping(entry, entry_pointer)
            if "$ref" in param:
                name = self._local_name(param["$ref"], "parameters")
                target = self.global_params.get(name) if name is not None else None
                if isinstance(target, Mapping) and "$ref" not in target:
                    target_pointer = f"/parameters/{_escape(name)}"
                    location = self._location(target, target_pointer)
                    params.append(_Param(param, target, location, target_pointer, name))
                else:
                    params.append(_Param(param, param, "", entry_pointer))
                continue
            params.append(_Param(param, param, self._location(param, entry_pointer), entry_pointer))
        return params

    def _location(self, param: Mapping[str, Any], pointer: str) -> str:
        location = param.get("in")
        if location not in _LOCATIONS:
            raise self._error(f"parameter 'in' must be one of {', '.join(_LOCATIONS)}", f"{pointer}/in")
        if location != "body" and not isinstance(param.get("name"), str):
            raise self._error("parameter has no name", f"{pointer}/name")
        return str(location)

    def _operation(self, op: Mapping[str, Any], pointer: str, shared: list[_Param]) -> dict[str, Any]:
        consumes = self._media_types(op["consumes"], f"{pointer}/consumes") if "consumes" in op else None
        produces = self._media_types(op["produces"], f"{pointer}/produces") if "produces" in op else None
        consumes = consumes or self.consumes
        produces = produces or self.produces

        own = self._params(op.get("parameters", []), f"{pointer}/parameters")
        own_keys = {param.key for param in own}
        effective = [param for param in shared if param.key not in own_keys] + own
        # An operation-level body replaces the path-level one, whatever their names.
        bodies = [param for param in own if param.location == "body"] or [
            param for param in shared if param.location == "body"
        ]
        if len(bodies) > 1:
            raise self._error("an operation can have only one body parameter", bodies[1].pointer)
        form = [param for param in effective if param.location == "formData"]
        if bodies and form:
            raise self._error("body and formData parameters cannot be used together", f"{pointer}/parameters")

        out: dict[str, Any] = {}
        for key in ("tags", "summary", "description", "externalDocs", "operationId"):
            if key in op:
                out[key] = op[key]
        parameters = [self._parameter_entry(param) for param in own if param.location not in _BODY_LOCATIONS]
        if parameters:
            out["parameters"] = parameters
        if bodies:
            out["requestBody"] = self._operation_body(bodies[0], consumes)
        elif form:
            out["requestBody"] = self._form_request_body(form, consumes)
        if "responses" in op:
            out["responses"] = self._responses(op["responses"], f"{pointer}/responses", produces)
        if "deprecated" in op:
            out["deprecated"] = op["deprecated"]
        if "security" in op:
            out["security"] = op["security"]
        if "schemes" in op:
            schemes = self._callable_schemes(op["schemes"], f"{pointer}/schemes")
            if self.host and schemes and schemes != (self.schemes or ["https"]):
                out["servers"] = self._servers(schemes)
        out.update(_extensions(op))
        return out

    # ----------------------------------------------------------------- parameters

    def _parameter_entry(self, param: _Param) -> Any:
        if param.raw is not param.resolved or param.location == "":
            return self._ref_object(param.raw)
        return self._parameter(param.resolved, param.location, param.pointer)

    def _parameter(self, param: Mapping[str, Any], location: str, pointer: str) -> dict[str, Any]:
        out: dict[str, Any] = {"name": param["name"], "in": location}
        description = param.get("description")
        style: tuple[str, bool] | None = None
        if param.get("type") == "array":
            collection_format = _collection_format(param)
            if location == "query" and collection_format in _QUERY_STYLES:
                style = _QUERY_STYLES[collection_format]
            elif location == "query":
                style = ("form", False)
            else:
                style = ("simple", False)
            supported = collection_format in _QUERY_STYLES if location == "query" else collection_format == "csv"
            if not supported:
                description = _with_note(description, _unsupported_format_note(collection_format))
        if description is not None:
            out["description"] = description
        if location == "path":
            out["required"] = True  # required in both versions; some 2.0 descriptions leave it out
        elif "required" in param:
            out["required"] = param["required"]
        if location == "query" and "allowEmptyValue" in param:
            out["allowEmptyValue"] = param["allowEmptyValue"]
        if style is not None:
            out["style"], out["explode"] = style
        out["schema"] = self._simple_schema(param, pointer)
        if "x-example" in param:
            out["example"] = param["x-example"]
        out.update({key: value for key, value in _extensions(param).items() if key not in ("x-example", "x-nullable")})
        return out

    # ----------------------------------------------------------------- request bodies

    def _operation_body(self, param: _Param, consumes: list[str]) -> Any:
        if param.ref_name is not None and consumes == self.consumes:
            return self._ref_object(param.raw)  # the same as components.requestBodies/<name>
        return self._body_request_body(param, consumes)

    def _body_request_body(self, param: _Param, consumes: list[str]) -> dict[str, Any]:
        body = param.resolved
        out: dict[str, Any] = {}
        if "description" in body:
            out["description"] = body["description"]
        media: dict[str, Any] = {}
        if "schema" in body:
            media["schema"] = self._schema(body["schema"], f"{param.pointer}/schema")
        out["content"] = {media_type: dict(media) for media_type in consumes}
        if "required" in body:
            out["required"] = body["required"]
        if isinstance(body.get("name"), str):
            out["x-codegen-request-body-name"] = body["name"]
        out.update(_extensions(body))
        return out

    @staticmethod
    def _form_media_type(params: Iterable[Mapping[str, Any] | None], consumes: list[str]) -> str:
        if MULTIPART in consumes or any(param is not None and param.get("type") == "file" for param in params):
            return MULTIPART
        return FORM_URLENCODED

    def _form_request_body(self, params: list[_Param], consumes: list[str]) -> dict[str, Any]:
        media_type = self._form_media_type((param.resolved for param in params), consumes)
        properties: dict[str, Any] = {}
        required: list[str] = []
        encoding: dict[str, Any] = {}
        for param in params:
            field = param.resolved
            name = str(field["name"])
            schema = self._simple_schema(field, param.pointer)
            description = field.get("description")
            if field.get("type") == "array":
                collection_format = _collection_format(field)
                if media_type == FORM_URLENCODED:
                    style, explode = _QUERY_STYLES.get(collection_format, ("form", False))
                    encoding[name] = {"style": style, "explode": explode}
                    if collection_format not in _QUERY_STYLES:
                        description = _with_note(description, _unsupported_format_note(collection_format))
            if isinstance(schema, Mapping):
                if description is not None:
                    schema = {**schema, "description": description}
                if "x-example" in field:
                    schema = {**schema, "example": field["x-example"]}
            properties[name] = schema
            if field.get("required") is True:
                required.append(name)
        schema_out: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema_out["required"] = required
        media: dict[str, Any] = {"schema": schema_out}
        if encoding:
            media["encoding"] = encoding
        out: dict[str, Any] = {"content": {media_type: media}}
        if required:
            out["required"] = True
        return out

    # ----------------------------------------------------------------- responses

    def _responses(self, raw: Any, pointer: str, produces: list[str]) -> dict[str, Any]:
        responses = self._mapping(raw, pointer)
        out: dict[str, Any] = {}
        for code, response in responses.items():
            key = str(code)
            if key.startswith("x-"):
                out[key] = response
                continue
            out[key] = self._response(response, f"{pointer}/{_escape(key)}", produces)
        return out

    def _response(self, raw: Any, pointer: str, produces: list[str]) -> Any:
        response = self._mapping(raw, pointer)
        if "$ref" in response:
            name = self._local_name(response["$ref"], "responses")
            target = self.global_responses.get(name) if name is not None else None
            if (
                produces == self.produces
                or not isinstance(target, Mapping)
                or "$ref" in target
                or not ("schema" in target or "examples" in target)
            ):
                return self._ref_object(response)
            # The shared response is written for the document's media types; this operation has others.
            return self._response(target, f"/responses/{_escape(name)}", produces)
        out: dict[str, Any] = {"description": response.get("description", "")}
        if "headers" in response:
            headers = self._mapping(response["headers"], f"{pointer}/headers")
            out["headers"] = {
                name: self._header(header, f"{pointer}/headers/{_escape(name)}") for name, header in headers.items()
            }
        examples = self._mapping(response.get("examples", {}), f"{pointer}/examples")
        content: dict[str, Any] = {}
        if "schema" in response:
            schema = self._schema(response["schema"], f"{pointer}/schema")
            for media_type in [*produces, *(t for t in examples if t not in produces)]:
                content[media_type] = {"schema": schema}
        for media_type, example in examples.items():
            content.setdefault(media_type, {})["example"] = example
        if content:
            out["content"] = content
        out.update(_extensions(response))
        return out

    def _header(self, raw: Any, pointer: str) -> dict[str, Any]:
        header = self._mapping(raw, pointer)
        out: dict[str, Any] = {}
        description = header.get("description")
        collection_format = _collection_format(header)
        if header.get("type") == "array" and collection_format != "csv":
            description = _with_note(description, _unsupported_format_note(collection_format))
        if description is not None:
            out["description"] = description
        out["schema"] = self._simple_schema(header, pointer)
        out.update({key: value for key, value in _extensions(header).items() if key != "x-nullable"})
        return out


def _collection_format(raw: Mapping[str, Any]) -> str:
    """A parameter's `collectionFormat` (`csv` when absent); one that is not a string is named as no format is."""
    found = raw.get("collectionFormat", "csv")
    return found if isinstance(found, str) else f"({type(found).__name__})"
