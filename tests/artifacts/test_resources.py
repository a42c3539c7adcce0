"""Resources and templates from artifact files: listing, MCP Apps bindings, reading and completion."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from apimcp.artifacts import resources
from apimcp.artifacts.resources import (
    APP_MIME_TYPE,
    MATCH_STEPS_PER_READ,
    MAX_MATCHED_URI_LENGTH,
    Loaded,
    ResourceCatalog,
    ResourceUnavailable,
)
from apimcp.artifacts.uri_matching import MatchBudget
from apimcp.artifacts.uri_templates import UriTemplate
from apimcp.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, ResourceNotFound
from apimcp.protocol.models import BlobResourceContents, ResourceContents, TextResourceContents
from tests.artifacts.test_documents import DOT_SEGMENT_IN_DISGUISE

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()

RESOURCES: dict[str, dict[str, Any]] = {
    "file:///docs/readme.md": {
        "name": "readme",
        "title": "Read me",
        "description": "The project's read-me",
        "mimeType": "text/markdown",
        "size": 120,
        "icons": [
            {"src": "https://cdn.example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}
        ],
        "annotations": {"audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"},
        "_meta": {"example.com/owner": "docs-team"},
    },
    "file:///data/report.bin": {"name": "report"},
    "note://welcome": {"name": "welcome", "text": "Hello"},
    "img://logo": {"name": "logo", "blob": PNG, "mimeType": "image/png"},
    "raw://bytes": {"name": "bytes", "blob": PNG},
    "ui://user/card.html": {
        "name": "card",
        "remoteContent": "https://cdn.example.com/card.html",
        "tools": ["get_user", {"list_repos": {"visibility": ["app"]}}],
        "_meta": {"ui": {"prefersBorder": True}},
    },
    "ui://user/inline.html": {"name": "inline", "text": "<p>hi</p>", "tools": ["get_user", "get_org"]},
    "ui://custom": {"name": "custom", "text": "<p/>", "mimeType": "text/html"},
    "https://example.com/feed.json": {"name": "feed", "remoteContent": "https://example.com/feed.json"},
    "note://empty": {"name": "nothing to read"},
}
TEMPLATES: dict[str, dict[str, Any]] = {
    "file:///docs/{section}/{page}.md": {
        "name": "doc page",
        "title": "A documentation page",
        "mimeType": "text/markdown",
        "completions": {"section": ["guides", "reference", "Glossary"]},
        "annotations": {"priority": 1},
        "_meta": {"k": "v"},
    },
    "repo://{owner}/{repo}{?ref}": {"name": "repo file", "completions": {"owner": [f"o{i}" for i in range(150)]}},
    "file:///{+path}": {"name": "any file"},
}


class FakeLoader:
    """Serves fixed bytes and records what was asked."""

    def __init__(self, files: dict[str, Loaded] | None = None, remote: dict[str, Loaded] | None = None) -> None:
        self.files = files or {}
        self.remote_contents = remote or {}
        self.calls: list[tuple[str, str]] = []

    async def backend_file(self, path: str, member: int) -> Loaded:
        assert member == 0  # one member: what its documents declare is read from its backend
        self.calls.append(("file", path))
        if path not in self.files:
            raise ResourceUnavailable("the backend answered HTTP 404")
        return self.files[path]

    async def remote(self, url: str) -> Loaded:
        self.calls.append(("remote", url))
        if url not in self.remote_contents:
            raise ResourceUnavailable("https://cdn.example.com answered HTTP 503")
        return self.remote_contents[url]


@pytest.fixture
def catalog() -> ResourceCatalog:
    return ResourceCatalog(RESOURCES, TEMPLATES)


async def _read_one(catalog: ResourceCatalog, uri: str, loader: FakeLoader) -> ResourceContents:
    result = await catalog.read(uri, loader)
    assert len(result.contents) == 1
    return result.contents[0]


# --- listing -------------------------------------------------------------------------------------


def test_resources_are_listed_in_order_with_every_declared_field(catalog: ResourceCatalog) -> None:
    items = catalog.resources_page.items
    assert [r.uri for r in items] == list(RESOURCES)
    readme = items[0]
    assert (readme.name, readme.title, readme.description) == ("readme", "Read me", "The project's read-me")
    assert (readme.mime_type, readme.size) == ("text/markdown", 120)
    (icon,) = readme.icons
    assert (icon.src, icon.mime_type, icon.sizes, icon.theme) == (
        "https://cdn.example.com/i.png",
        "image/png",
        ("48x48",),
        "dark",
    )
    assert readme.annotations is not None
    annotations = readme.annotations
    assert (annotations.audience, annotations.priority, annotations.last_modified) == (
        ("user", "assistant"),
        0.5,
        "2026-01-01T00:00:00Z",
    )
    assert readme.meta == {"example.com/owner": "docs-team"}
    report = items[1]
    assert (
        report.title,
        report.description,
        report.mime_type,
        report.size,
        report.annotations,
        report.icons,
        report.meta,
    ) == (
        None,
        None,
        None,
        None,
        None,
        (),
        None,
    )


def test_inline_resources_get_a_default_mime_type(catalog: ResourceCatalog) -> None:
    mime = {r.uri: r.mime_type for r in catalog.resources_page.items}
    assert mime["note://welcome"] == "text/plain"
    assert mime["img://logo"] == "image/png"
    assert mime["raw://bytes"] == "application/octet-stream"


def test_a_ui_resource_is_an_mcp_app_unless_it_declares_a_type(catalog: ResourceCatalog) -> None:
    mime = {r.uri: r.mime_type for r in catalog.resources_page.items}
    assert mime["ui://user/card.html"] == APP_MIME_TYPE == "text/html;profile=mcp-app"
    assert mime["ui://user/inline.html"] == APP_MIME_TYPE
    assert mime["ui://custom"] == "text/html"


def test_templates_are_listed_with_their_fields(catalog: ResourceCatalog) -> None:
    doc, repo, any_file = catalog.templates_page.items
    assert (doc.uri_template, doc.name, doc.title, doc.mime_type) == (
        "file:///docs/{section}/{page}.md",
        "doc page",
        "A documentation page",
        "text/markdown",
    )
    assert doc.annotations is not None
    assert doc.annotations.priority == 1.0
    assert doc.meta == {"k": "v"}
    assert (repo.uri_template, repo.mime_type, repo.annotations, repo.meta) == (
        "repo://{owner}/{repo}{?ref}",
        None,
        None,
        None,
    )
    assert any_file.uri_template == "file:///{+path}"


def test_capabilities_follow_what_is_declared() -> None:
    both = ResourceCatalog(RESOURCES, TEMPLATES)
    assert (both.has_resources, both.has_templates) == (True, True)
    only_templates = ResourceCatalog({}, TEMPLATES)
    assert (only_templates.has_resources, only_templates.has_templates) == (False, True)
    only_resources = ResourceCatalog(RESOURCES)
    assert (only_resources.has_resources, only_resources.has_templates) == (True, False)
    assert only_resources.templates_page.items == ()


def test_an_invalid_template_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"resource template 'x://\{a\}\{b\}' cannot be served: .* touch"):
        ResourceCatalog({}, {"x://{a}{b}": {"name": "bad"}})


# --- MCP Apps ------------------------------------------------------------------------------------


def test_tools_listed_by_a_ui_resource_carry_its_uri_and_visibility(catalog: ResourceCatalog) -> None:
    assert catalog.tool_meta("get_user") == {"ui": {"resourceUri": "ui://user/card.html"}}  # the first binding wins
    assert catalog.tool_meta("list_repos") == {"ui": {"resourceUri": "ui://user/card.html", "visibility": ["app"]}}
    assert catalog.tool_meta("get_org") == {"ui": {"resourceUri": "ui://user/inline.html"}}
    assert catalog.tool_meta("unbound") is None


def test_only_ui_resources_bind_tools() -> None:
    catalog = ResourceCatalog({"note://x": {"name": "x", "text": "t", "tools": ["get_user"]}})
    assert catalog.tool_meta("get_user") is None


# --- reading -------------------------------------------------------------------------------------


async def test_inline_text_and_blob_are_served_with_their_meta(catalog: ResourceCatalog) -> None:
    loader = FakeLoader()
    welcome = await _read_one(catalog, "note://welcome", loader)
    assert isinstance(welcome, TextResourceContents)
    assert (welcome.uri, welcome.text, welcome.mime_type) == ("note://welcome", "Hello", "text/plain")
    logo = await _read_one(catalog, "img://logo", loader)
    assert isinstance(logo, BlobResourceContents)
    assert (logo.blob, logo.mime_type) == (PNG, "image/png")
    inline_app = await _read_one(catalog, "ui://user/inline.html", loader)
    assert isinstance(inline_app, TextResourceContents)
    assert inline_app.mime_type == APP_MIME_TYPE
    assert loader.calls == []


async def test_a_file_resource_is_read_from_the_backend_with_the_declared_type(catalog: ResourceCatalog) -> None:
    loader = FakeLoader(files={"/docs/readme.md": Loaded(b"# Hello \xc3\xa9", "application/octet-stream")})
    contents = await _read_one(catalog, "file:///docs/readme.md", loader)
    assert loader.calls == [("file", "/docs/readme.md")]
    assert isinstance(contents, TextResourceContents)
    assert (contents.text, contents.mime_type) == ("# Hello é", "text/markdown")
    assert contents.meta == {"example.com/owner": "docs-team"}


async def test_binary_content_from_the_backend_is_base64(catalog: ResourceCatalog) -> None:
    data = bytes(range(256))
    loader = FakeLoader(files={"/data/report.bin": Loaded(data, "application/pdf")})
    contents = await _read_one(catalog, "file:///data/report.bin", loader)
    assert isinstance(contents, BlobResourceContents)
    assert base64.b64decode(contents.blob) == data
    assert contents.mime_type == "application/pdf"


async def test_the_remote_content_of_an_app_stays_an_mcp_app(catalog: ResourceCatalog) -> None:
    loader = FakeLoader(
        remote={"https://cdn.example.com/card.html": Loaded(b"<div>card</div>", "text/html; charset=utf-8")}
    )
    contents = await _read_one(catalog, "ui://user/card.html", loader)
    assert loader.calls == [("remote", "https://cdn.example.com/card.html")]
    assert isinstance(contents, TextResourceContents)
    assert (contents.text, contents.mime_type) == ("<div>card</div>", APP_MIME_TYPE)
    assert contents.meta == {"ui": {"prefersBorder": True}}


async def test_remote_content_of_any_scheme_keeps_the_loaders_type_when_none_is_declared(
    catalog: ResourceCatalog,
) -> None:
    loader = FakeLoader(remote={"https://example.com/feed.json": Loaded(b'{"a": 1}', "application/feed+json")})
    contents = await _read_one(catalog, "https://example.com/feed.json", loader)
    assert isinstance(contents, TextResourceContents)
    assert (contents.text, contents.mime_type) == ('{"a": 1}', "application/feed+json")


@pytest.mark.parametrize(
    ("media_type", "data", "text"),
    [
        ("text/plain", b"plain", True),
        ("text/csv; charset=utf-8", b"a,b", True),
        ("application/json", b"{}", True),
        ("application/problem+json", b"{}", True),
        ("application/yaml", b"a: 1", True),
        ("application/x-yaml", b"a: 1", True),
        ("application/xml", b"<a/>", True),
        ("image/svg+xml", b"<svg/>", True),
        ("application/javascript", b"1;", True),
        ("TEXT/HTML", b"<p/>", True),
        ("text/plain", b"\xff\xfe not utf-8", False),  # a textual type with bytes that are not UTF-8
        ("image/png", b"\x89PNG", False),
        ("application/octet-stream", b"abc", False),
        ("application/pdf", b"%PDF", False),
    ],
)
async def test_the_media_type_decides_between_text_and_blob(media_type: str, data: bytes, text: bool) -> None:
    catalog = ResourceCatalog({"file:///x": {"name": "x"}})
    contents = await _read_one(catalog, "file:///x", FakeLoader(files={"/x": Loaded(data, media_type)}))
    assert contents.mime_type == media_type
    if text:
        assert isinstance(contents, TextResourceContents)
        assert contents.text == data.decode()
    else:
        assert isinstance(contents, BlobResourceContents)
        assert base64.b64decode(contents.blob) == data


async def test_a_template_under_file_reads_the_backend_path_of_the_uri(catalog: ResourceCatalog) -> None:
    loader = FakeLoader(files={"/docs/guides/intro.md": Loaded(b"intro", "text/plain")})
    contents = await _read_one(catalog, "file:///docs/guides/intro.md", loader)
    assert loader.calls == [("file", "/docs/guides/intro.md")]
    assert isinstance(contents, TextResourceContents)
    assert (contents.uri, contents.text, contents.mime_type) == (
        "file:///docs/guides/intro.md",
        "intro",
        "text/markdown",
    )
    assert contents.meta == {"k": "v"}


async def test_the_first_matching_template_in_declaration_order_wins(catalog: ResourceCatalog) -> None:
    loader = FakeLoader(files={"/other/place.txt": Loaded(b"x", "text/plain")})
    contents = await _read_one(catalog, "file:///other/place.txt", loader)  # only `file:///{+path}` matches
    assert loader.calls == [("file", "/other/place.txt")]
    assert contents.mime_type == "text/plain"


@pytest.mark.parametrize(
    "uri",
    [
        "note://unknown",
        "note://empty",  # declared without any content source
        "repo://octo/hello?ref=main",  # a template, but only file:// templates have a content source
        "file:///docs/../secrets/key.md",  # dot segments could leave the template's directory
        "file:///docs/%2E%2E/secrets/key.md",
        "file:///docs/guides/..%2F..%2Fetc.md",
        "file:////evil.example/x",  # a path that would begin another host
        "file:///%2F%2Fevil.example/x",
        "other://x",
    ],
)
async def test_what_cannot_be_read_is_not_found(catalog: ResourceCatalog, uri: str) -> None:
    loader = FakeLoader()
    with pytest.raises(ResourceNotFound) as raised:
        await catalog.read(uri, loader)
    assert raised.value.uri == uri
    assert raised.value.data == {"uri": uri}
    assert loader.calls == []


@pytest.mark.parametrize("uri", [uri for uri, _ in DOT_SEGMENT_IN_DISGUISE])
async def test_a_path_servers_read_with_a_dot_segment_is_not_found(catalog: ResourceCatalog, uri: str) -> None:
    """Issue 21, L4: a template's expansion (`file:///{+path}`) that a Java, Windows or Unicode-normalizing backend
    reads as leaving its directory, or cuts into other segments, never reaches the backend."""
    loader = FakeLoader()
    with pytest.raises(ResourceNotFound) as raised:
        await catalog.read(uri, loader)
    assert raised.value.uri == uri
    assert loader.calls == []


async def test_a_loader_failure_is_an_internal_error_naming_the_resource(catalog: ResourceCatalog) -> None:
    with pytest.raises(ResourceUnavailable) as raised:
        await catalog.read("ui://user/card.html", FakeLoader())
    error = raised.value
    assert isinstance(error, McpError)
    assert error.code == INTERNAL_ERROR == -32603
    assert error.message == "Resource unavailable: https://cdn.example.com answered HTTP 503"
    assert error.data == {"uri": "ui://user/card.html"}
    with pytest.raises(ResourceUnavailable, match="HTTP 404"):
        await catalog.read("file:///docs/guides/missing.md", FakeLoader())


# --- bounds on matching -------------------------------------------------------------------------


async def test_an_over_long_uri_is_refused_before_any_template_is_tried(
    catalog: ResourceCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding M3: the 400 KB URI that stalled the loop (the body limit allows ten times more) is not matched."""

    def never(self: UriTemplate, uri: str, budget: MatchBudget | None = None) -> None:
        raise AssertionError(f"{self.text} was tried")

    monkeypatch.setattr(UriTemplate, "match", never)
    loader = FakeLoader()
    for length in (MAX_MATCHED_URI_LENGTH + 1, 400_000):
        uri = "file:///redos/" + "a" * (length - len("file:///redos/"))
        with pytest.raises(McpError) as raised:
            await catalog.read(uri, loader)
        assert raised.value.code == INVALID_PARAMS
        assert raised.value.message == (
            f"The resource URI is {length} characters long: resource templates match at most {MAX_MATCHED_URI_LENGTH}"
        )
        assert raised.value.data == {"field": "uri", "limit": MAX_MATCHED_URI_LENGTH}
    assert loader.calls == []


async def test_a_declared_uri_is_read_whatever_its_length() -> None:
    uri = "note://" + "n" * MAX_MATCHED_URI_LENGTH
    contents = await _read_one(ResourceCatalog({uri: {"name": "long", "text": "t"}}, TEMPLATES), uri, FakeLoader())
    assert isinstance(contents, TextResourceContents)


async def test_matching_across_many_templates_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding M3: a read tries templates in turn, so the work was templates times URI length (times literal
    length); the steps of one read are counted across every template, and the read ends once they are spent."""
    budgets: list[MatchBudget] = []

    class Kept(MatchBudget):
        def __init__(self, limit: int) -> None:
            super().__init__(limit)
            budgets.append(self)

    monkeypatch.setattr(resources, "MatchBudget", Kept)
    templates = {f"file:///docs/{{a}}-{i}/{{b}}.md": {"name": f"t{i}"} for i in range(1000)}
    catalog = ResourceCatalog({}, templates)
    uri = "file:///docs/" + "a" * (MAX_MATCHED_URI_LENGTH - 20) + ".md"  # each template reads it to the end
    loader = FakeLoader()
    with pytest.raises(McpError) as raised:
        await catalog.read(uri, loader)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == (
        f"Matching {uri} against this exposition's 1000 resource templates takes more than the "
        f"{MATCH_STEPS_PER_READ} steps a read may spend"
    )
    (budget,) = budgets
    one_template = 4 * MAX_MATCHED_URI_LENGTH  # what one of these templates may take at most
    assert MATCH_STEPS_PER_READ < budget.spent <= MATCH_STEPS_PER_READ + one_template
    assert loader.calls == []
    # a URI that a later template matches is read when the earlier ones refuse it at once
    last = FakeLoader(files={"/docs/x-999/y.md": Loaded(b"y", "text/plain")})
    found = await _read_one(catalog, "file:///docs/x-999/y.md", last)
    assert isinstance(found, TextResourceContents)


# --- completion ----------------------------------------------------------------------------------


def test_template_completion_uses_declared_values_by_prefix(catalog: ResourceCatalog) -> None:
    completion = catalog.complete("file:///docs/{section}/{page}.md", "section", "g")
    assert (list(completion.values), completion.total, completion.has_more) == (["guides", "Glossary"], 2, False)
    empty = catalog.complete("file:///docs/{section}/{page}.md", "page", "")
    assert (list(empty.values), empty.total, empty.has_more) == ([], 0, False)


def test_template_completion_stops_at_one_hundred(catalog: ResourceCatalog) -> None:
    completion = catalog.complete("repo://{owner}/{repo}{?ref}", "owner", "o")
    assert (len(completion.values), completion.total, completion.has_more) == (100, 150, True)


def test_completing_an_unknown_template_is_invalid_params(catalog: ResourceCatalog) -> None:
    with pytest.raises(McpError, match=re.escape("Unknown resource template: x://{id}")) as raised:
        catalog.complete("x://{id}", "id", "")
    assert raised.value.code == INVALID_PARAMS
