"""Reading API descriptions: local files or http(s) URLs, JSON or YAML, and the documents they reference.

URLs are read with the guarded fetch (`apimcp.safety.fetch`): a description may come
from a user-supplied URL, so only addresses the fetch policy allows are reached, within
one deadline and a size cap. A description fetched from a URL may only reference other
URLs: it never reads local files. YAML and JSON are read within `YamlLimits` (aliases,
depth, expanded size). A URL that cannot be parsed is a SpecError, never a ValueError.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml

from apimcp.importers.errors import SpecError
from apimcp.safety.fetch import BadUrl, Fetcher, FetchError, FetchLimits, FetchRefused, join_url, url_origin
from apimcp.safety.yaml_loading import JsonTooDeep, YamlLimitError, YamlLimits, check_depth, load_yaml

__all__ = ["DocumentSet", "FetchLimits", "Fetcher", "fetch", "is_url", "parse", "pointer_get"]

ACCEPT = "application/json, application/yaml, */*"
_SCHEME = re.compile(r"[\x00-\x20]*([A-Za-z][A-Za-z0-9+.-]*):")


def is_url(location: str) -> bool:
    return scheme_of(location) in ("http", "https")


def scheme_of(location: str) -> str:
    """The scheme of `location` in lower case ("" for a path), even when the rest of it cannot be parsed (an
    unclosed IPv6 bracket): reading it says what is wrong."""
    try:
        return urllib.parse.urlsplit(location).scheme
    except ValueError:
        found = _SCHEME.match(location)
        return found.group(1).lower() if found else ""


def parse(content: bytes, source: str, limits: YamlLimits | None = None) -> Any:
    """A JSON or YAML document (JSON is tried first when the text looks like it), within `limits`."""
    limits = limits or YamlLimits()
    text = content.lstrip()
    if text[:1] in (b"{", b"["):
        try:
            document = orjson.loads(content)
        except orjson.JSONDecodeError:
            pass  # maybe YAML in flow style
        else:
            try:
                check_depth(document, limits.max_depth)
            except JsonTooDeep as exc:
                raise SpecError(str(exc), source=source) from None
            return document
    try:
        return load_yaml(content, limits)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, YamlLimitError):
            raise SpecError(f"{problem}{where}", source=source) from None
        raise SpecError(f"not valid JSON or YAML{where}: {problem}", source=source) from exc


def fetch_error(exc: FetchError, source: str, doing: str = "fetch it") -> SpecError:
    """A guarded fetch's failure as an import error."""
    verb = "refused to" if isinstance(exc, FetchRefused) else "could not"
    return SpecError(f"{verb} {doing}: {exc}", source=source)


def fetch(location: str, fetcher: Fetcher, headers: Mapping[str, str] | None = None) -> bytes:
    """The bytes at a local path or an http(s) URL, refusing anything larger than the limit.

    `headers` (credentials) go to `location`'s origin only: a redirect elsewhere drops them."""
    scheme = scheme_of(location)
    limit = fetcher.limits.max_bytes
    if scheme in ("http", "https"):
        try:
            content = fetcher.get(location, credentials=headers, accept=ACCEPT)
        except FetchError as exc:
            raise fetch_error(exc, location) from None
    elif scheme and len(scheme) > 1:
        raise SpecError(f"only local files and http(s) URLs can be imported, not {scheme}:", source=location)
    else:
        path = Path(location)
        try:
            with path.open("rb") as handle:
                content = handle.read(limit + 1)
        except OSError as exc:
            raise SpecError(f"could not read it: {exc.strerror}", source=location) from exc
    if len(content) > limit:
        raise SpecError(f"it is larger than the {limit} bytes allowed", source=location)
    return content


class DocumentSet:
    """The main description and every document its `$ref`s reach, each read once."""

    def __init__(
        self,
        main: str,
        fetcher: Fetcher | None = None,
        main_document: Any = None,
        *,
        external: bool = True,
        headers: Mapping[str, str] | None = None,
        yaml_limits: YamlLimits | None = None,
    ) -> None:
        self._fetcher = fetcher or Fetcher()
        self._yaml_limits = yaml_limits or YamlLimits()
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
            try:
                same_origin = url_origin(uri) == url_origin(self.main_uri)
            except BadUrl as exc:
                raise fetch_error(exc, uri) from None
            headers = self._headers if same_origin else None
            self._documents[uri] = parse(fetch(uri, self._fetcher, headers), uri, self._yaml_limits)
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
            try:
                target = join_url(base_uri, reference)
            except BadUrl as exc:
                raise SpecError(f"the reference {reference!r} cannot be followed: {exc}", source=base_uri) from None
            if not is_url(target):
                raise SpecError(f"a description fetched from a URL may not reference {reference!r}", source=base_uri)
            return target
        if is_url(reference):
            return reference
        if scheme_of(reference):
            raise SpecError(f"unsupported reference {reference!r}", source=base_uri)
        return str((Path(base_uri).parent / urllib.parse.unquote(reference)).resolve())


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
        elif isinstance(value, list) and part.isascii() and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise SpecError(f"the reference target {pointer!r} does not exist", source=source)
    return value
