"""Tool arguments to an HTTP request, exactly as an OpenAPI operation describes it.

Parameters follow their style and explode settings (OpenAPI 3 "Style Values"):
path `simple`, `label`, `matrix`; query `form`, `spaceDelimited`,
`pipeDelimited`, `deepObject`; headers `simple`; cookies `form`. Values are
percent-encoded unless `allowReserved`. Bodies are JSON, form-urlencoded,
multipart (file fields given as base64 or data: URLs), text or raw bytes.
Building a request is pure: no I/O, so it is tested on its own.

A path that does not start with `/` is refused: appended to the backend URL it
would change its host. Arguments never change the request's shape: a path
parameter is data in its segment (`/` is encoded, and a segment that would be
`.` or `..` has its dots sent as `%2E`, so no client or server removes it as a
dot-segment), and what would go into a header is refused when it holds a
control character (CR, LF, NUL...) or is not what that header takes: a header
parameter, a data: URL's media type (it becomes a Content-Type), a multipart
field name.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlencode

import aiohttp
import orjson

from apimcp.backends.credentials import Placement, header_problem
from apimcp.catalog.model import BodyBinding, ParameterBinding, RestBinding

_UNRESERVED = "-._~"
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[^\x00-\x08\x0a-\x1f\x7f])*"'
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?:[ \t]*;(?:[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))?)*[ \t]*")
"""type/subtype and parameters (RFC 9110, 8.3.1)."""
_RESERVED_IN_QUERY = ":/?@!$'()*,;"
"""What `allowReserved` lets through unencoded in a query value: RFC 3986's reserved characters but `#`, `[` and `]`
(not allowed in a query) and `&`, `=` and `+` (which would start another parameter, or read as a space): OpenAPI
3.1.1 leaves encoding those to the application, and sent as they are they would cut the value short or add a
parameter of the client's choosing (`q=x&key=...`, `q=x#` dropping what follows, the backend's key included)."""


class InvalidArgument(ValueError):
    """An argument that cannot be put into the request (e.g. file content that is not base64)."""

    def __init__(self, argument: str, problem: str) -> None:
        super().__init__(f"argument {argument!r}: {problem}")
        self.argument = argument


@dataclass(slots=True)
class PreparedRequest:
    method: str
    url: str
    """Fully encoded, credentials included."""
    public_url: str
    """The same without credentials, for messages and content URIs."""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | aiohttp.FormData | None = None


def _text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return orjson.dumps(value).decode()
    return orjson.dumps(value).decode()


def _enc(value: Any, allow_reserved: bool = False) -> str:
    return quote(_text(value), safe=_UNRESERVED + (_RESERVED_IN_QUERY if allow_reserved else ""))


def _pairs(value: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in value.items() if v is not None]


def _path_value(p: ParameterBinding, value: Any) -> str:
    if p.content_type is not None:
        return _enc(orjson.dumps(value).decode())
    if p.style == "label":
        prefix, separator = ".", "." if p.explode else ","
    elif p.style == "matrix":
        prefix, separator = ";", ";" if p.explode else ","
    else:
        prefix, separator = "", ","
    if isinstance(value, list):
        items = [_enc(v) for v in value]
        if p.style == "matrix":
            if p.explode:
                return "".join(f";{p.name}={v}" for v in items)
            return f";{p.name}=" + ",".join(items)
        return prefix + separator.join(items)
    if isinstance(value, dict):
        pairs = _pairs(value)
        if p.explode:
            joined = separator.join(f"{_enc(k)}={_enc(v)}" for k, v in pairs)
            return prefix + joined
        flat = ",".join(f"{_enc(k)},{_enc(v)}" for k, v in pairs)
        return f";{p.name}={flat}" if p.style == "matrix" else prefix + flat
    if p.style == "matrix":
        return f";{p.name}={_enc(value)}"
    return prefix + _enc(value)


def _query_items(p: ParameterBinding, value: Any) -> list[str]:
    name = _enc(p.name)
    if p.content_type is not None:
        return [f"{name}={_enc(orjson.dumps(value).decode())}"]

    def enc(v: Any) -> str:
        return _enc(v, p.allow_reserved)

    if p.style == "deepObject" and isinstance(value, dict):
        return [f"{name}%5B{_enc(k)}%5D={enc(v)}" for k, v in _pairs(value)]
    delimiter = {"spaceDelimited": "%20", "pipeDelimited": "|"}.get(p.style)
    if delimiter is not None and isinstance(value, list | dict):
        items = value if isinstance(value, list) else [x for pair in _pairs(value) for x in pair]
        return [f"{name}=" + delimiter.join(enc(v) for v in items)]
    if isinstance(value, list):
        if p.explode:
            return [f"{name}={enc(v)}" for v in value]
        return [f"{name}=" + ",".join(enc(v) for v in value)]
    if isinstance(value, dict):
        if p.explode:
            return [f"{_enc(k)}={enc(v)}" for k, v in _pairs(value)]
        return [f"{name}=" + ",".join(f"{enc(k)},{enc(v)}" for k, v in _pairs(value))]
    return [f"{name}={enc(value)}"]


def _header_value(p: ParameterBinding, value: Any) -> str:
    if p.content_type is not None:
        return orjson.dumps(value).decode()
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        if p.explode:
            return ",".join(f"{k}={_text(v)}" for k, v in _pairs(value))
        return ",".join(f"{k},{_text(v)}" for k, v in _pairs(value))
    return _text(value)


def _cookie_value(p: ParameterBinding, value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_enc(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{_enc(k)},{_enc(v)}" for k, v in _pairs(value))
    return _enc(value)


_SEPARATORS = re.compile("%2F|%5C", re.IGNORECASE)


def _dot_segments_encoded(path: str) -> str:
    """`path` with the dots of would-be dot-segments sent as %2E. A segment counts when it, or a part of it
    between encoded separators (%2F, %5C: some servers decode them first), is `.` or `..` once %2E is read
    as a dot (as WHATWG URL parsers do)."""
    segments = path.split("/")
    for index, segment in enumerate(segments):
        if "." not in segment:
            continue
        parts = _SEPARATORS.split(segment.replace("%2e", ".").replace("%2E", "."))
        if any(part in (".", "..") for part in parts):
            segments[index] = segment.replace(".", "%2E")
    return "/".join(segments)


def _under_base(base_url: str, path: str, written: str) -> str:
    """`path` appended to the backend URL. It must start with `/`: anything else would extend the URL's authority
    (`@host` makes the backend's name a user name, `.example` or `:1` another host or port), and the request would
    carry the backend's credentials elsewhere. `written` is the path as the operation declares it, for the error."""
    if not path.startswith("/"):
        raise ValueError(f"the path {written!r} does not start with '/': appended to the backend URL it would name "
                         "another host")  # fmt: skip
    return base_url.rstrip("/") + path


def media_type_problem(value: str) -> str | None:
    """Why `value` cannot be sent as a Content-Type, or None."""
    problem = header_problem(value)
    if problem is None and not _MEDIA_TYPE.fullmatch(value):
        problem = "it is not a media type (type/subtype, then any ;name=value parameters)"
    return problem


def decode_file(argument: str, value: Any) -> tuple[bytes, str | None]:
    """File content from base64 or a data: URL; the media type when the data URL names one."""
    if not isinstance(value, str):
        raise InvalidArgument(argument, "file content must be a base64 string or a data: URL")
    if value.startswith("data:"):
        header, comma, data = value[5:].partition(",")
        if not comma:
            raise InvalidArgument(argument, "a data: URL needs a comma before its data")
        media_type = header.split(";", 1)[0] or None
        problem = media_type_problem(media_type) if media_type is not None else None
        if problem is not None:
            raise InvalidArgument(argument, f"the data: URL's media type cannot be a Content-Type: {problem}")
        if header.endswith(";base64"):
            return _b64(argument, data), media_type
        return unquote_to_bytes(data), media_type
    return _b64(argument, value), None


def _b64(argument: str, text: str) -> bytes:
    compact = "".join(text.split())
    try:
        return base64.b64decode(
            compact + "=" * (-len(compact) % 4),
            altchars=b"-_" if "-" in compact or "_" in compact else None,
            validate=True,
        )
    except (binascii.Error, ValueError) as exc:
        raise InvalidArgument(argument, "file content is not valid base64") from exc


def _body(
    binding: BodyBinding, arguments: Mapping[str, Any], bound: set[str]
) -> tuple[bytes | aiohttp.FormData | None, str | None]:
    """The body and its content type."""
    if binding.argument is not None:
        if binding.argument not in arguments:
            return None, None
        value = arguments[binding.argument]
        if binding.kind == "binary":
            data, media_type = decode_file(binding.argument, value)
            return data, media_type or binding.media_type
        if binding.kind == "text":
            return _text(value).encode(), binding.media_type
        if binding.kind in ("form", "multipart") and isinstance(value, dict):
            # A form kept whole (its schema says more than its fields): a bad field name is this argument's fault.
            return _fields(binding, value, binding.argument)
        return orjson.dumps(value), binding.media_type
    fields = {name: arguments[name] for name in binding.fields if name in arguments}
    if binding.extra_fields:
        fields.update({k: v for k, v in arguments.items() if k not in bound and k not in fields})
    if not fields and not binding.required:
        return None, None
    return _fields(binding, fields)


def _fields(
    binding: BodyBinding, fields: Mapping[str, Any], argument: str | None = None
) -> tuple[bytes | aiohttp.FormData, str | None]:
    """Named fields as a JSON object, a urlencoded form or multipart parts. `argument` holds all the fields, when
    one does (else each field is an argument)."""
    if binding.kind == "json":
        return orjson.dumps(fields), binding.media_type
    if binding.kind == "form":
        pairs: list[tuple[str, str]] = []
        for name, value in fields.items():
            if isinstance(value, list):
                pairs.extend((name, _text(v)) for v in value)
            elif value is not None:
                pairs.append((name, _text(value)))
        return urlencode(pairs).encode(), binding.media_type
    # Multipart even when no part is a file (aiohttp would otherwise send a urlencoded form).
    form = aiohttp.FormData(quote_fields=False, default_to_multipart=True)
    for name, value in fields.items():
        problem = header_problem(name)  # a part's name goes into its Content-Disposition header
        if problem is not None:
            what = f"the form field name {name!r}" if argument is not None else "a form field name"
            raise InvalidArgument(argument or name, f"{what} cannot be sent: {problem}")
        # An array is one part per item (OpenAPI 3.1 multipart), files included.
        for item in value if isinstance(value, list) else [value]:
            _add_part(form, binding, name, item)
    return form, None  # aiohttp writes the multipart boundary into the content type


def _add_part(form: aiohttp.FormData, binding: BodyBinding, name: str, value: Any) -> None:
    if value is None:
        return
    if name in binding.binary_fields:
        data, media_type = decode_file(name, value)
        declared = binding.field_media_types.get(name)
        form.add_field(name, data, filename=name, content_type=media_type or declared or "application/octet-stream")
    elif isinstance(value, dict | list):
        form.add_field(name, orjson.dumps(value).decode(), content_type="application/json")
    else:
        form.add_field(name, _text(value))


def build_request(
    binding: RestBinding, arguments: Mapping[str, Any], base_url: str, credentials: Placement | None = None
) -> PreparedRequest:
    path = binding.path
    query: list[str] = []
    headers: dict[str, str] = {}
    cookies: list[str] = []
    bound: set[str] = set()
    for p in binding.parameters:
        bound.add(p.argument)
        value = arguments.get(p.argument)
        if p.location == "path":
            if value is None:
                raise InvalidArgument(p.argument, "a path parameter needs a value")
            segment = _path_value(p, value)
            if not segment:  # `/items/{id}` with "" would be `/items/`: another resource (the collection)
                raise InvalidArgument(p.argument, "a path parameter needs a value that is not empty")
            path = path.replace("{" + p.name + "}", segment)
        elif value is None:
            continue
        elif p.location == "query":
            query.extend(_query_items(p, value))
        elif p.location == "header":
            text = _header_value(p, value)
            problem = header_problem(text)
            if problem is not None:
                raise InvalidArgument(p.argument, f"a header parameter cannot be sent: {problem}")
            headers[p.name] = text
        else:
            cookies.append(f"{p.name}={_cookie_value(p, value)}")
    if "." in path:
        path = _dot_segments_encoded(path)
    body, content_type = (None, None)
    if binding.body is not None:
        body, content_type = _body(binding.body, arguments, bound)
    if content_type is not None:
        headers["Content-Type"] = content_type
    if binding.accept:
        headers.setdefault("Accept", ", ".join(binding.accept))
    under = _under_base(base_url, path, binding.path)
    if credentials is not None:
        query, cookies = _credentials_first(credentials, query, headers, cookies)
    public = under + ("?" + "&".join(query) if query else "")
    if credentials is not None:
        headers.update(credentials.headers)
        query.extend(f"{_enc(k)}={_enc(v)}" for k, v in credentials.query)
        cookies.extend(f"{k}={_enc(v)}" for k, v in credentials.cookies.items())
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    url = under + ("?" + "&".join(query) if query else "")
    return PreparedRequest(method=binding.method, url=url, public_url=public, headers=headers, body=body)


def _credentials_first(
    credentials: Placement, query: list[str], headers: dict[str, str], cookies: list[str]
) -> tuple[list[str], list[str]]:
    """The arguments' query items and cookies without those named as the gateway's credentials are, and their
    headers likewise (any case): the credential takes its own slot. Sent beside it, the client's value came first,
    and most backends read the first (`key=ATTACKER&key=<the plan's key>`, `x-api-key` before `X-Api-Key`)."""
    if credentials.headers:
        taken = {name.lower() for name in credentials.headers}
        for name in [name for name in headers if name.lower() in taken]:
            del headers[name]
    if credentials.query:
        named = {_enc(name) for name, _ in credentials.query}
        query = [item for item in query if item.partition("=")[0] not in named]
    if credentials.cookies:
        names = set(credentials.cookies)
        cookies = [cookie for cookie in cookies if cookie.partition("=")[0] not in names]
    return query, cookies
