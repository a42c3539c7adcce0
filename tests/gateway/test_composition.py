"""An exposition composed from operations and artifacts: what is listed, what stands behind each name."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import toon_format

from apimcp.artifacts.bundle import merge
from apimcp.artifacts.filter_runner import FilterLimits, FilterRunner
from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from apimcp.backends.base import Backend, BackendResult, JsonBody, Progress
from apimcp.catalog.model import Operation
from apimcp.demo_api import spec_path
from apimcp.gateway.calls import CallPath
from apimcp.gateway.composition import Composition, Extras, compose
from apimcp.gateway.toolset import ToolSet
from apimcp.importers.openapi import import_openapi
from apimcp.protocol import TextContent
from apimcp.shaping.limits import ShapingLimits
from apimcp.shaping.pool import ShapingPool
from tests.shaping.recording import Recording as RecordingShaper

pytestmark = pytest.mark.anyio
CTX: Any = SimpleNamespace(progress_token=None)
OPERATIONS = import_openapi(str(spec_path()), name="bookshelf").operations


class Recording(Backend):
    """Answers every call with the operation's tool name and arguments (and `books` books), and remembers them."""

    def __init__(self, books: int = 1) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.books = [{"id": n + 1, "title": "t"} for n in range(books)]

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        self.calls.append((operation.tool_name, dict(arguments)))
        value = {"tool": operation.tool_name, "arguments": dict(arguments), "books": self.books}
        return JsonBody(value, orjson.dumps(value).decode())


def _compose(
    *documents: tuple[str, dict[str, Any]],
    runner: ScriptRunner | None = None,
    backend: Recording | None = None,
    calls: CallPath | None = None,
    filters: FilterRunner | None = None,
    books: int = 1,
) -> tuple[Composition, Recording]:
    backend = backend or Recording(books)
    bundle = merge([[{"kind": kind, "document": document} for kind, document in documents]])
    extras = Extras(bundle=bundle, runner=runner, calls=calls or CallPath("", ""), filters=filters or FilterRunner())
    # no output schemas: the recording backend's answers are not the Bookshelf's
    return compose([(ToolSet(OPERATIONS, output_schemas=False), backend)], extras), backend


def _declarative(target: str, **arguments: Any) -> dict[str, Any]:
    return {"description": "d", "input": {"type": "object"}, "tool": target, "arguments": arguments}


def test_without_artifacts_the_tool_sets_page_is_served_as_is() -> None:
    tools = ToolSet(OPERATIONS)
    composition = compose([(tools, Recording())], Extras())
    assert composition.page is tools.page
    assert composition.prompts is None and composition.resources is None


async def test_a_declarative_tool_replaces_its_target_named_by_operation_id_or_signature() -> None:
    composition, backend = _compose(
        (
            "CustomTools",
            {
                "customTools": {
                    "author": _declarative("getAuthor", name="${who}"),
                    "shelf": _declarative("get /books", limit=5),
                }
            },
        ),
    )
    listed = [tool.name for tool in composition.page.items]
    assert "get_author" not in listed and "list_books" not in listed
    assert listed[-2:] == ["author", "shelf"]
    await composition.exposed["author"].call(CTX, {"who": "ada"})
    await composition.exposed["shelf"].call(CTX, {})
    assert backend.calls == [("get_author", {"name": "ada"}), ("list_books", {"limit": 5})]
    assert composition.find("get_author") is not None  # scripts still reach the hidden target


async def test_a_declarative_tool_may_call_another_built_first() -> None:
    composition, backend = _compose(
        (
            "CustomTools",
            {
                "customTools": {
                    "outer": _declarative("inner", who="${name}"),
                    "inner": _declarative("getAuthor", name="${who}"),
                }
            },
        ),
    )
    assert "inner" not in composition.exposed  # the outer one replaces it, as it replaces an operation
    await composition.exposed["outer"].call(CTX, {"name": "ada"})
    assert backend.calls == [("get_author", {"name": "ada"})]


def test_a_tool_whose_target_is_gone_is_left_out_and_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "apimcp.gateway"):
        composition, _ = _compose(("CustomTools", {"customTools": {"lost": _declarative("removed_since")}}))
    assert "lost" not in composition.exposed and "list_books" in composition.exposed
    assert "custom tool lost calls 'removed_since'" in caplog.text


async def test_filters_apply_to_clients_and_to_scripts_alike() -> None:
    script = {
        "description": "d",
        "input": {"type": "object"},
        "tools": [{"tool": "list_books"}],
        "script": "return rs.callTool('list_books', {}).content;",
    }
    runner = ScriptRunner(ScriptLimits(timeout_seconds=5))
    try:
        composition, _ = _compose(
            ("CustomTools", {"customTools": {"via_script": script}}),
            ("ToolsOutputFilters", {"filters": {"listBooks": {"jsonRetain": ["/books/title"]}}}),
            runner=runner,
        )
        direct = await composition.exposed["list_books"].call(CTX, {})
        scripted = await composition.exposed["via_script"].call(CTX, {})
    finally:
        runner.close()
    assert direct.structured_content == {"books": [{"title": "t"}]}
    assert scripted.structured_content == {"books": [{"title": "t"}]}


async def test_a_declarative_tool_gets_its_target_s_filtered_answer() -> None:
    """A filter may remove what must not reach the model: a declarative tool standing for the tool it filters,
    directly or through another declarative tool, gets the filtered answer too."""
    composition, _ = _compose(
        ("CustomTools", {"customTools": {"shelf": _declarative("list_books"), "outer": _declarative("shelf")}}),
        ("ToolsOutputFilters", {"filters": {"listBooks": {"jsonRetain": ["/books/title"]}}}),
    )
    direct = await composition.find("list_books").call(CTX, {})  # type: ignore[union-attr]
    shelf = await composition.exposed["outer"].call(CTX, {})
    assert direct.structured_content == shelf.structured_content == {"books": [{"title": "t"}]}


async def test_convert_to_toon_of_a_large_answer_runs_in_a_shaping_process() -> None:
    # issue 21, M4: TOON of a 5.6 MB answer held the event loop for a second (in a worker thread too: it shared the
    # interpreter with the loop); a large result is filtered in a shaping process
    pool = ShapingPool(ShapingLimits(workers=1))
    shaper = RecordingShaper(pool)
    filters = FilterRunner(FilterLimits(process_from_bytes=32 * 1024), shaper)
    try:
        composition, _ = _compose(
            ("ToolsOutputFilters", {"filters": {"list_books": {"convertToToon": True}}}), filters=filters, books=2000
        )
        result = await composition.exposed["list_books"].call(CTX, {})
    finally:
        pool.close()
    assert len(shaper.pids) == 1 and shaper.pids[0] != os.getpid()
    assert isinstance(result.content[0], TextContent) and result.content[0].text.startswith("tool: list_books")


async def test_small_answers_are_filtered_on_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    encode = toon_format.encode

    def recording_encode(value: Any) -> str:
        threads.append(threading.current_thread().name)
        return encode(value)

    monkeypatch.setattr(toon_format, "encode", recording_encode)
    composition, _ = _compose(("ToolsOutputFilters", {"filters": {"list_books": {"convertToToon": True}}}))
    await composition.exposed["list_books"].call(CTX, {})
    assert threads == [threading.current_thread().name]


def test_a_ui_resource_may_name_its_tool_by_operation_id() -> None:
    resources = {"ui://card": {"name": "card", "text": "<p>", "tools": ["getBook"]}}
    composition, _ = _compose(("Resources", {"resources": resources}))
    assert composition.exposed["get_book"].tool.meta["ui"] == {"resourceUri": "ui://card"}  # type: ignore[index]
    assert "ui" not in (composition.exposed["list_books"].tool.meta or {})


def test_scripted_tools_are_left_out_where_no_scripts_run(caplog: pytest.LogCaptureFixture) -> None:
    script = {"description": "d", "input": {"type": "object"}, "tools": [{"tool": "list_books"}], "script": "1"}
    with caplog.at_level(logging.WARNING, "apimcp.gateway"):
        composition, _ = _compose(("CustomTools", {"customTools": {"s": script}}))
    assert "s" not in composition.exposed and "runs no scripts" in caplog.text


def test_a_broken_template_keeps_the_rest_of_the_exposition(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "apimcp.gateway"):
        composition, _ = _compose(
            ("Resources", {"resourceTemplates": {"file:///{unclosed": {"name": "x"}}}),
            ("Prompts", {"prompts": {"p": {"result": "r"}}}),
        )
    assert composition.resources is None and composition.prompts is not None
    assert "resources cannot be served" in caplog.text


@pytest.mark.parametrize(("declared", "called"), [("listBooks", "list_books"), ("list_books", "GET /books")])
async def test_a_scripts_allow_list_and_its_calls_may_name_a_tool_differently(declared: str, called: str) -> None:
    script = {
        "description": "d",
        "input": {"type": "object"},
        "tools": [{"tool": declared}],
        "script": f"const r = rs.callTool('{called}', {{}}); if (!r.ok) throw new Error(r.error.message); return 1;",
    }
    runner = ScriptRunner(ScriptLimits(timeout_seconds=5))
    try:
        composition, backend = _compose(("CustomTools", {"customTools": {"s": script}}), runner=runner)
        result = await composition.exposed["s"].call(CTX, {})
        refused = (
            await _compose(
                ("CustomTools", {"customTools": {"s": {**script, "tools": [{"tool": "get_book"}]}}}), runner=runner
            )[0]
            .exposed["s"]
            .call(CTX, {})
        )
    finally:
        runner.close()
    assert not result.is_error and backend.calls == [("list_books", {})]
    assert refused.is_error and called in refused.content[0].text  # type: ignore[union-attr]


async def test_a_script_s_runs_take_the_share_of_its_own_exposition() -> None:
    runner = ScriptRunner(ScriptLimits(timeout_seconds=5))
    held: list[int] = []

    class Watching(Recording):
        async def call(
            self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
        ) -> BackendResult:
            held.append(runner.held("expo-a"))
            return await super().call(operation, arguments, progress)

    script = {"description": "d", "input": {"type": "object"}, "tools": [{"tool": "list_books"}],
              "script": "return rs.callTool('list_books', {}).ok;"}  # fmt: skip
    try:
        composition, _ = _compose(("CustomTools", {"customTools": {"s": script}}), runner=runner, backend=Watching(),
                                  calls=CallPath("expo-a", "a"))  # fmt: skip
        result = await composition.exposed["s"].call(CTX, {})
    finally:
        runner.close()
    assert not result.is_error and held == [1]
