"""Reading API descriptions: local files or http(s) URLs, JSON or YAML, and the documents they reference.

Fetching is bounded (size, time, redirects to http(s) only) because a
description may come from a user-supplied URL. A description fetched from a
URL may only reference other URLs: it never reads local files.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from apimcp.importers.errors import SpecError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS


class _Loader(yaml.SafeLoader):
    """YAML as JSON sees it: dates and times stay strings (a schema's `example: 2024-01-01`)."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def is_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme in ("http", "https")


def parse(content: bytes, source: str) -> Any:
    """A JSON or YAML document (JSON is tried first when the text looks like it)."""
    text = content.lstrip()
    if text[:1] in (b"{", b"["):
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            pass  # maybe YAML in flow style
    try:
        return yaml.load(content, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"not valid JSON or YAML{where}: {problem}", source=source) from exc


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        if not is_url(newurl):
            raise urllib.error.HTTPError(newurl, code, f"redirect to a non-http(s) URL refused: {newurl}", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_opener = urllib.request.build_opener(_HttpOnlyRedirects)


def fetch(location: str, limits: FetchLimits, headers: Mapping[str, str] | None = None) -> bytes:
    """The bytes at a local path or an http(s) URL, refusing anything larger than the limit.

    `headers` (credentials) go to `location` only: a redirect does not carry them elsewhere."""
    scheme = urllib.parse.urlsplit(location).scheme
    if scheme in ("http", "https"):
        request = urllib.request.Request(location, headers={"Accept": "application/json, application/yaml, */*"})
        for name, value in (headers or {}).items():
            request.add_unredirected_header(name, value)
        try:
            with _opener.open(request, timeout=limits.timeout_seconds) as response:
                content: bytes = response.read(limits.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise SpecError(f"could not fetch it: HTTP {exc.code} {exc.reason}", source=location) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SpecError(f"could not fetch it: {reason}", source=location) from exc
    elif scheme and len(scheme) > 1:
        raise SpecError(f"only local files and http(s) URLs can be imported, not {scheme}:", source=location)
    else:
        path = Path(location)
        try:
            with path.open("rb") as handle:
                content = handle.read(limits.max_bytes + 1)
        except OSError as exc:
            raise SpecError(f"could not read it: {exc.strerror}", source=location) from exc
    if len(content) > limits.max_bytes:
        raise SpecError(f"it is larger than the {limits.max_bytes} bytes allowed", source=location)
    return content


class DocumentSet:
    """The main description and every document its `$ref`s reach, each read once."""

    def __init__(
        self,
        main: str,
        limits: FetchLimits | None = None,
        main_document: Any = None,
        *,
        external: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._limits = limits or FetchLimits()
        self._external = external
        """Whether references may name other documents (not for uploads: they have no location)."""
        self._headers = dict(headers or {})
        """Credentials for the main document's origin, and only for it."""
        self.main_uri = main if is_url(main) or not external else str(Path(main).resolve())
        self._documents: dict[str, Any] = {}
        if main_document is not None:
            self._documents[self.main_uri] = main_document

    def document(self, uri: str) -> Any:
        if uri not in self._documents:
            headers = self._headers if _origin(uri) == _origin(self.main_uri) else None
            self._documents[uri] = parse(fetch(uri, self._limits, headers), uri)
        return self._documents[uri]

    def main(self) -> Any:
        return self.document(self.main_uri)

    def absolute(self, base_uri: str, reference: str) -> str:
        """The document a reference's file part names, relative to the document it appears in."""
        if not reference:
            return base_uri
        if not self._external:
            raise SpecError(
                f"it references another document ({reference!r}); import it from a URL or a file instead",
                source=base_uri,
            )
        if is_url(base_uri):
            target = urllib.parse.urljoin(base_uri, reference)
            if not is_url(target):
                raise SpecError(f"a description fetched from a URL may not reference {reference!r}", source=base_uri)
            return target
        if is_url(reference):
            return reference
        if urllib.parse.urlsplit(reference).scheme:
            raise SpecError(f"unsupported reference {reference!r}", source=base_uri)
        return str((Path(base_uri).parent / urllib.parse.unquote(reference)).resolve())


def _origin(uri: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(uri)
    return parts.scheme, parts.hostname or "", parts.port


def pointer_get(document: Any, pointer: str, source: str) -> Any:
    """The value a JSON pointer (`/a/b~1c`, URI-encoded) names in a document."""
    value = document
    if not pointer:
        return value
    if not pointer.startswith("/"):
        raise SpecError(f"unsupported JSON pointer {pointer!r}", source=source)
    for raw in pointer[1:].split("/"):
        part = urllib.parse.unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise SpecError(f"the reference target {pointer!r} does not exist", source=source)
    return value
