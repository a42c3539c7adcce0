"""A small MCP server built on the engine: a notebook a newcomer can talk to.

It shows what the engine carries in every revision: tools with structured
output, progress, a confirmation asked through elicitation, resources and a
resource template, a prompt with arguments and completions, and list-change
notifications.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apimcp import __version__
from apimcp.protocol import (
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    GetPromptResult,
    Implementation,
    McpHandler,
    Page,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptRef,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    ServerFeatures,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    ToolError,
    invalid_params,
)

_NOTE_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "title": {"type": "string"}, "text": {"type": "string"}},
    "required": ["id", "title", "text"],
}

TOOLS = (
    Tool(
        name="add_note",
        title="Add a note",
        description="Store a note and return it with its id.",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "A short title"},
                "text": {"type": "string", "description": "The note itself"},
            },
            "required": ["title", "text"],
        },
        output_schema=_NOTE_SCHEMA,
    ),
    Tool(
        name="search_notes",
        title="Search notes",
        description="Notes whose title or text contains the query (case-insensitive).",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        output_schema={"type": "object", "properties": {"notes": {"type": "array", "items": _NOTE_SCHEMA}}},
        annotations=ToolAnnotations(read_only_hint=True),
    ),
    Tool(
        name="delete_note",
        title="Delete a note",
        description="Delete a note after asking the user to confirm (when the client supports elicitation).",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True),
    ),
    Tool(
        name="word_count",
        title="Count words",
        description="Count the words of every note, reporting progress note by note.",
        input_schema={"type": "object", "properties": {}},
        annotations=ToolAnnotations(read_only_hint=True),
    ),
)

PROMPTS = (
    Prompt(
        name="summarize_note",
        title="Summarize a note",
        description="Ask the model to summarize one note.",
        arguments=(PromptArgument(name="id", description="The note's id", required=True),),
    ),
)


@dataclass(frozen=True, slots=True)
class Note:
    id: int
    title: str
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "text": self.text}


class NotebookDemo(McpHandler):
    """An in-memory notebook."""

    server_info = Implementation(name="apimcp-demo", version=__version__, title="apimcp demo notebook")
    instructions = "A notebook: add, search and delete notes; read them as note://{id} resources."
    features = ServerFeatures(
        tools=True,
        tools_list_changed=False,
        prompts=True,
        resources=True,
        resources_list_changed=True,
        resources_subscribe=True,
        completions=True,
    )

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._notes: dict[int, Note] = {}
        self._add("Welcome", "This notebook lives in memory. Try the search_notes tool.")

    def _add(self, title: str, text: str) -> Note:
        note = Note(next(self._ids), title, text)
        self._notes[note.id] = note
        return note

    def cache_hint(self, method: str) -> CacheHint:
        return CacheHint(ttl_ms=60_000, scope="public") if method == "tools/list" else CacheHint()

    def tool_definition(self, name: str) -> Tool | None:
        return next((t for t in TOOLS if t.name == name), None)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        return Page(items=TOOLS)

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        if name == "add_note":
            title, text = arguments.get("title"), arguments.get("text")
            if not isinstance(title, str) or not isinstance(text, str):
                raise ToolError("add_note needs a string title and a string text")
            note = self._add(title, text)
            ctx.changes.resources_changed()
            return _json_result(note.as_json())
        if name == "search_notes":
            query = str(arguments.get("query", "")).lower()
            found = [n.as_json() for n in self._notes.values() if query in (n.title + " " + n.text).lower()]
            return _json_result({"notes": found})
        if name == "delete_note":
            return await self._delete(ctx, arguments.get("id"))
        if name == "word_count":
            total = 0
            notes = list(self._notes.values())
            for done, note in enumerate(notes, start=1):
                total += len(note.text.split())
                await ctx.progress(done, len(notes), f"Counted {note.title!r}")
            return CallToolResult(content=(TextContent(text=f"{total} words in {len(notes)} notes"),))
        raise invalid_params(f"Unknown tool: {name}")

    async def _delete(self, ctx: RequestContext, note_id: object) -> CallToolResult:
        note = self._notes.get(note_id) if isinstance(note_id, int) else None
        if note is None:
            raise ToolError(f"No note with id {note_id!r}")
        if ctx.has_client_capability("elicitation"):
            answer = await ctx.elicit(
                f"Delete the note {note.title!r}?",
                {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Delete it"}}},
                key="confirm_delete",
            )
            if answer.get("action") != "accept" or not answer.get("content", {}).get("confirm"):
                return CallToolResult(content=(TextContent(text="Kept the note."),))
        del self._notes[note.id]
        ctx.changes.resources_changed()
        return CallToolResult(content=(TextContent(text=f"Deleted note {note.id}."),))

    async def list_prompts(self, ctx: RequestContext, cursor: str | None) -> Page[Prompt]:
        return Page(items=PROMPTS)

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        if name != "summarize_note":
            raise invalid_params(f"Unknown prompt: {name}")
        note = self._note_from(arguments.get("id", ""))
        text = f"Summarize this note in one sentence.\n\nTitle: {note.title}\n\n{note.text}"
        return GetPromptResult(messages=(PromptMessage(role="user", content=TextContent(text=text)),))

    async def list_resources(self, ctx: RequestContext, cursor: str | None) -> Page[Resource]:
        return Page(
            items=[Resource(uri=f"note://{n.id}", name=n.title, mime_type="text/plain") for n in self._notes.values()]
        )

    async def list_resource_templates(self, ctx: RequestContext, cursor: str | None) -> Page[ResourceTemplate]:
        return Page(items=(ResourceTemplate(uri_template="note://{id}", name="note", mime_type="text/plain"),))

    async def read_resource(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        if not uri.startswith("note://"):
            raise ResourceNotFound(uri)
        note = self._notes.get(int(uri[7:])) if uri[7:].isdigit() else None
        if note is None:
            raise ResourceNotFound(uri)
        return ReadResourceResult(contents=(TextResourceContents(uri=uri, text=note.text, mime_type="text/plain"),))

    async def complete(
        self, ctx: RequestContext, ref: CompletionRef, argument: str, value: str, context_arguments: Mapping[str, str]
    ) -> Completion:
        if argument == "id" and (isinstance(ref, PromptRef) or ref.uri == "note://{id}"):
            return Completion(values=[str(i) for i in self._notes if str(i).startswith(value)])
        return Completion()

    def _note_from(self, raw_id: str) -> Note:
        note = self._notes.get(int(raw_id)) if raw_id.isdigit() else None
        if note is None:
            raise invalid_params(f"No note with id {raw_id!r}", {"field": "arguments.id"})
        return note


def _json_result(value: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=orjson.dumps(value).decode()),), structured_content=value)
