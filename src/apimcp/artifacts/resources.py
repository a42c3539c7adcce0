"""Resources and resource templates declared in artifact files, and where their content comes from.

Everything is built when the catalog is (list pages, compiled templates, the tools' `_meta.ui`), so
resources/read only looks up and loads. Content is inline (`text`, base64 `blob`), fetched
(`remoteContent`, through the loader, which applies the gateway's fetch policy) or, for `file://`
URIs, read from the backend of the exposition's member (service) whose artifacts declared the resource or
template: `file:///guides/readme.md` is that backend's `/guides/readme.md`, and a URI that would name
anything but a plain path there is not found (`file_paths`). A URI with no content source is listed but
not found when read.

A read that is not a declared URI is matched against the templates within bounds: a URI of at most
`MAX_MATCHED_URI_LENGTH` characters, and `MATCH_STEPS_PER_READ` steps across all of them.

MCP Apps: a `ui://` resource is HTML for the client to render (`text/html;profile=mcp-app` unless it
says otherwise); the tools in its `tools` list carry `_meta.ui.resourceUri`, and a `visibility` when
the binding declares one.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from apimcp.artifacts.file_paths import file_path, file_path_problem
from apimcp.artifacts.prompts import complete_values
from apimcp.artifacts.uri_matching import MatchBudget, MatchBudgetSpent
from apimcp.artifacts.uri_templates import UriTemplate
from apimcp.protocol.errors import INTERNAL_ERROR, McpError, ResourceNotFound, invalid_params
from apimcp.protocol.models import (
    Annotations,
    BlobResourceContents,
    Completion,
    Icon,
    Page,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
    Role,
    TextResourceContents,
)

__all__ = [
    "APP_MIME_TYPE",
    "MATCH_STEPS_PER_READ",
    "MAX_MATCHED_URI_LENGTH",
    "ContentLoader",
    "Loaded",
    "ResourceCatalog",
    "ResourceUnavailable",
    "is_text_media_type",
]

APP_MIME_TYPE = "text/html;profile=mcp-app"
MAX_MATCHED_URI_LENGTH = 8192
"""The longest URI matched against templates (what HTTP servers commonly accept as a request line)."""
MATCH_STEPS_PER_READ = 32 * MAX_MATCHED_URI_LENGTH
"""The steps (`uri_matching`) one read may spend across every template: in the costliest shapes of template
measured, tens of milliseconds of a busy machine's loop (about 40 ms with two cores shared eight ways)."""
_TEXT_MARKERS = ("json", "yaml", "xml", "javascript")
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant"}


@dataclass(frozen=True, slots=True)
class Loaded:
    """Content a loader read, with the media type its source gave."""

    data: bytes
    media_type: str


class ContentLoader(Protocol):
    """Reads content that is not inline; raises ContentMissing when there is none at that place (the read is
    then not found), ResourceUnavailable when it cannot read it."""

    async def backend_file(self, path: str, member: int) -> Loaded:
        """`path` on the backend of the exposition's `member` (its index), the one whose artifacts declared it."""
        ...

    async def remote(self, url: str) -> Loaded: ...


class ResourceUnavailable(McpError):
    """A resource that exists but whose content could not be read (-32603).

    `reason` reaches the client: loaders say what failed without credentials or internal addresses.
    """

    def __init__(self, reason: str, uri: str | None = None) -> None:
        super().__init__(INTERNAL_ERROR, f"Resource unavailable: {reason}", {"uri": uri} if uri else None)
        self.reason = reason
        self.uri = uri


class ContentMissing(Exception):
    """Raised by a loader when there is nothing at that place (a backend's 404): the resource is not found."""


def is_text_media_type(media_type: str) -> bool:
    """Whether content of this type is sent as text (when it is UTF-8) rather than base64."""
    essence = media_type.split(";", 1)[0].strip().lower()
    return essence.startswith("text/") or any(marker in essence for marker in _TEXT_MARKERS)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _icons(specs: Any) -> tuple[Icon, ...]:
    return tuple(
        Icon(
            src=str(spec["src"]),
            mime_type=_text(spec.get("mimeType")),
            sizes=tuple(str(size) for size in spec.get("sizes") or ()),
            theme="light" if spec.get("theme") == "light" else "dark" if spec.get("theme") == "dark" else None,
        )
        for spec in specs or ()
        if isinstance(spec, Mapping) and spec.get("src")
    )


def _annotations(spec: Any) -> Annotations | None:
    if not isinstance(spec, Mapping) or not spec:
        return None
    audience = spec.get("audience")
    priority = spec.get("priority")
    return Annotations(
        audience=None if audience is None else tuple(_ROLES[a] for a in audience if a in _ROLES),
        priority=None if priority is None else float(priority),
        last_modified=_text(spec.get("lastModified")),
    )


def _meta(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = spec.get("_meta")
    return dict(meta) if isinstance(meta, Mapping) and meta else None


def _scheme(uri: str) -> str:
    return uri.split(":", 1)[0].lower() if ":" in uri else ""


def _backend_path(uri: str, path: str) -> str:
    """`path`, what follows `file://` in `uri`, when it is a plain path on the backend; else the read is not found
    (a URI stored before attachments were checked, or a template's expansion)."""
    problem = file_path_problem(path)
    if problem is not None:
        raise ResourceNotFound(uri, problem)
    return path


@dataclass(frozen=True, slots=True)
class _Static:
    resource: Resource
    text: str | None
    blob: str | None
    remote: str | None
    path: str | None
    member: int
    """Whose backend `path` is read from: the member whose artifacts declared the resource."""


@dataclass(frozen=True, slots=True)
class _Template:
    definition: ResourceTemplate
    compiled: UriTemplate
    from_backend: bool
    candidates: Mapping[str, tuple[str, ...]]
    member: int


def _static(uri: str, spec: Mapping[str, Any], member: int) -> _Static:
    text, blob = _text(spec.get("text")), _text(spec.get("blob"))
    mime_type = _text(spec.get("mimeType"))
    if mime_type is None:
        if _scheme(uri) == "ui":
            mime_type = APP_MIME_TYPE
        elif text is not None:
            mime_type = "text/plain"
        elif blob is not None:
            mime_type = "application/octet-stream"
    size = spec.get("size")
    resource = Resource(
        uri=uri,
        name=str(spec.get("name") or uri),
        title=_text(spec.get("title")),
        description=_text(spec.get("description")),
        mime_type=mime_type,
        size=None if size is None else int(size),
        annotations=_annotations(spec.get("annotations")),
        icons=_icons(spec.get("icons")),
        meta=_meta(spec),
    )
    return _Static(resource, text, blob, _text(spec.get("remoteContent")), file_path(uri), member)


def _template(uri_template: str, spec: Mapping[str, Any], member: int) -> _Template:
    try:
        compiled = UriTemplate(uri_template)
    except ValueError as exc:
        raise ValueError(f"resource template {uri_template!r} cannot be served: {exc}") from exc
    definition = ResourceTemplate(
        uri_template=uri_template,
        name=str(spec.get("name") or uri_template),
        title=_text(spec.get("title")),
        description=_text(spec.get("description")),
        mime_type=_text(spec.get("mimeType")),
        annotations=_annotations(spec.get("annotations")),
        icons=_icons(spec.get("icons")),
        meta=_meta(spec),
    )
    completions = spec.get("completions") or {}
    candidates = {str(k): tuple(str(v) for v in values or ()) for k, values in completions.items()}
    return _Template(definition, compiled, file_path(uri_template) is not None, candidates, member)


def _bindings(statics: Sequence[_Static], specs: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool name → its `_meta` from the first `ui://` resource listing it."""
    bound: dict[str, Mapping[str, Any]] = {}
    for static in statics:
        uri = static.resource.uri
        if _scheme(uri) != "ui":
            continue
        for item in specs[uri].get("tools") or ():
            options: Mapping[str, Any] = {}
            if isinstance(item, Mapping):
                for name, value in item.items():
                    options = value if isinstance(value, Mapping) else {}
                    bound.setdefault(str(name), _ui_meta(uri, options))
            else:
                bound.setdefault(str(item), _ui_meta(uri, options))
    return bound


def _ui_meta(uri: str, options: Mapping[str, Any]) -> Mapping[str, Any]:
    ui: dict[str, Any] = {"resourceUri": uri}
    if options.get("visibility") is not None:
        ui["visibility"] = [str(v) for v in options["visibility"]]
    return {"ui": ui}


def _contents(uri: str, loaded: Loaded, mime_type: str | None, meta: Mapping[str, Any] | None) -> ResourceContents:
    """Text when the media type is textual and the bytes are UTF-8, base64 otherwise."""
    media_type = mime_type or loaded.media_type
    if is_text_media_type(media_type):
        try:
            return TextResourceContents(uri=uri, text=loaded.data.decode("utf-8"), mime_type=media_type, meta=meta)
        except UnicodeDecodeError:
            pass
    blob = base64.b64encode(loaded.data).decode("ascii")
    return BlobResourceContents(uri=uri, blob=blob, mime_type=media_type, meta=meta)


async def _load(pending: Awaitable[Loaded], uri: str) -> Loaded:
    try:
        return await pending
    except ContentMissing:
        raise ResourceNotFound(uri) from None
    except ResourceUnavailable as exc:
        if exc.uri is not None:
            raise
        raise ResourceUnavailable(exc.reason, uri) from exc


T = TypeVar("T")


def first_match(templates: Iterable[tuple[UriTemplate, T]], uri: str, count: int) -> T | None:
    """What goes with the first of `count` templates that matches `uri`, within the bounds every read keeps: the
    URI's length (`MAX_MATCHED_URI_LENGTH`) and the steps of all matches together (`MATCH_STEPS_PER_READ`)."""
    if not count:
        return None
    if len(uri) > MAX_MATCHED_URI_LENGTH:
        raise invalid_params(
            f"The resource URI is {len(uri)} characters long: resource templates match at most "
            f"{MAX_MATCHED_URI_LENGTH}",
            {"field": "uri", "limit": MAX_MATCHED_URI_LENGTH},
        )
    budget = MatchBudget(MATCH_STEPS_PER_READ)
    try:
        return next((found for compiled, found in templates if compiled.match(uri, budget) is not None), None)
    except MatchBudgetSpent:
        raise invalid_params(
            f"Matching {uri} against this exposition's {count} resource templates takes more than the "
            f"{MATCH_STEPS_PER_READ} steps a read may spend",
            {"uri": uri, "limit": MATCH_STEPS_PER_READ},
        ) from None


class ResourceCatalog:
    """The `resources` and `resourceTemplates` sections of an exposition's artifacts; `resource_members` and
    `template_members` say which member declared each (`ArtifactBundle`; member 0 when absent).

    Raises ValueError when a template is not a valid RFC 6570 template.
    """

    def __init__(
        self,
        resources: Mapping[str, Mapping[str, Any]],
        templates: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        resource_members: Mapping[str, int] | None = None,
        template_members: Mapping[str, int] | None = None,
    ) -> None:
        members, template_members = resource_members or {}, template_members or {}
        self._statics = {str(uri): _static(str(uri), spec, members.get(uri, 0)) for uri, spec in resources.items()}
        self._templates = {
            str(text): _template(str(text), spec, template_members.get(text, 0))
            for text, spec in (templates or {}).items()
        }
        self._tool_meta = _bindings(list(self._statics.values()), resources)
        self.resources_page: Page[Resource] = Page(items=tuple(s.resource for s in self._statics.values()))
        self.templates_page: Page[ResourceTemplate] = Page(items=tuple(t.definition for t in self._templates.values()))

    @property
    def has_resources(self) -> bool:
        return bool(self._statics)

    @property
    def has_templates(self) -> bool:
        return bool(self._templates)

    def tool_meta(self, tool_name: str) -> Mapping[str, Any] | None:
        """`{"ui": {"resourceUri": ...}}` for a tool a `ui://` resource binds, to merge into its `_meta`."""
        return self._tool_meta.get(tool_name)

    async def read(self, uri: str, loader: ContentLoader) -> ReadResourceResult:
        """The contents of `uri`: a declared resource first, then the first template that matches it."""
        static = self._statics.get(uri)
        if static is not None:
            return ReadResourceResult(contents=(await self._read_static(static, loader),))
        template = self._template_for(uri)
        path = file_path(uri) if template is not None and template.from_backend else None
        if template is None or path is None:
            raise ResourceNotFound(uri)
        loaded = await _load(loader.backend_file(_backend_path(uri, path), template.member), uri)
        definition = template.definition
        return ReadResourceResult(contents=(_contents(uri, loaded, definition.mime_type, definition.meta),))

    def _template_for(self, uri: str) -> _Template | None:
        """The first template that matches `uri`, within the bounds on its length and on the work."""
        return first_match(((t.compiled, t) for t in self._templates.values()), uri, len(self._templates))

    async def _read_static(self, static: _Static, loader: ContentLoader) -> ResourceContents:
        resource = static.resource
        uri, mime_type, meta = resource.uri, resource.mime_type, resource.meta
        if static.text is not None:
            return TextResourceContents(uri=uri, text=static.text, mime_type=mime_type, meta=meta)
        if static.blob is not None:
            return BlobResourceContents(uri=uri, blob=static.blob, mime_type=mime_type, meta=meta)
        if static.remote is not None:
            return _contents(uri, await _load(loader.remote(static.remote), uri), mime_type, meta)
        if static.path is not None:
            loaded = await _load(loader.backend_file(_backend_path(uri, static.path), static.member), uri)
            return _contents(uri, loaded, mime_type, meta)
        raise ResourceNotFound(uri)

    def complete(self, uri_template: str, argument: str, value: str) -> Completion:
        """The template's declared `completions` for `argument` that start with `value`."""
        template = self._templates.get(uri_template)
        if template is None:
            raise invalid_params(f"Unknown resource template: {uri_template}", {"field": "ref", "uri": uri_template})
        return complete_values(template.candidates.get(argument, ()), value)
