"""Reading resources from an exposition's backend: the path as sent, and what the backend's answers become."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from apimcp.artifacts.resources import ContentMissing, Loaded, ResourceUnavailable
from apimcp.backends.base import Backend, BackendResult, BinaryBody, Failure, JsonBody, Progress, TextBody
from apimcp.backends.oauth_client import TokenSession
from apimcp.catalog.model import Operation, RestBinding
from apimcp.gateway.resource_loading import BackendLoader

pytestmark = pytest.mark.anyio


class Answering(Backend):
    def __init__(self, answer: BackendResult) -> None:
        self.answer = answer
        self.paths: list[str] = []

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        assert isinstance(operation.binding, RestBinding) and operation.binding.method == "GET"
        self.paths.append(operation.binding.path)
        return self.answer


async def _read(path: str, answer: BackendResult) -> tuple[Loaded, list[str]]:
    backend = Answering(answer)
    return await BackendLoader(backend, TokenSession()).backend_file(path), backend.paths


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/docs/a.md", "/docs/a.md"),
        ("/items/a?verbose=true", "/items/a?verbose=true"),  # a template's query goes along
        ("/books/{1} x", "/books/%7B1%7D%20x"),  # what a path may not hold is sent encoded
        ("/caf%C3%A9", "/caf%C3%A9"),  # already encoded stays as it is
        ("/a#fragment", "/a"),
    ],
)
async def test_the_path_is_sent_as_a_uri_path(path: str, sent: str) -> None:
    _, paths = await _read(path, TextBody("x", "text/plain"))
    assert paths == [sent]


async def test_answers_become_contents_with_their_media_type() -> None:
    assert (await _read("/a", JsonBody({"a": 1}, '{"a":1}')))[0] == Loaded(b'{"a":1}', "application/json")
    assert (await _read("/a", TextBody("# T", "text/markdown")))[0] == Loaded(b"# T", "text/markdown")
    png = BinaryBody(b"\x89PNG", "image/png", "http://backend/a")
    assert (await _read("/a", png))[0] == Loaded(b"\x89PNG", "image/png")


async def test_a_404_is_missing_content_and_other_failures_are_unavailable() -> None:
    with pytest.raises(ContentMissing):
        await _read("/a", Failure("HTTP 404 Not Found", 404))
    with pytest.raises(ResourceUnavailable, match="HTTP 500"):
        await _read("/a", Failure("HTTP 500 Internal Server Error", 500))


async def test_without_a_backend_nothing_is_read() -> None:
    with pytest.raises(ResourceUnavailable, match="does not serve files"):
        await BackendLoader(None, TokenSession()).backend_file("/a")
