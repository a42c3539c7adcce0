"""An exposition: operations of one or more services, with their artifacts, served as an MCP server.

Everything a call needs is prepared when the exposition is built (`composition.py`): the entry behind
each tool name, validators, prompts and resources catalogs. The request path looks things up,
validates the arguments and calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from apimcp import __version__
from apimcp.artifacts.resources import Loaded, ResourceUnavailable
from apimcp.artifacts.scripting import Invoke, ToolRef
from apimcp.auth.resource import ExpositionResource
from apimcp.auth.tool_access import ToolAccess
from apimcp.backends.base import Backend
from apimcp.catalog.tools import tool_of
from apimcp.codemode.mode import NAMES as CODE_MODE_NAMES
from apimcp.codemode.mode import CodeMode
from apimcp.codemode.program import EXECUTE, ProgramError
from apimcp.codemode.setting import CodeModeSetting
from apimcp.gateway.calls import CallPath
from apimcp.gateway.composition import Composition, Extras, compose
from apimcp.gateway.guarded_offerings import guarded_prompt, guarded_read
from apimcp.gateway.resource_loading import BackendLoader
from apimcp.gateway.tool_entries import ToolEntry
from apimcp.gateway.toolset import ToolSet
from apimcp.gateway.upstream_offerings import UpstreamOfferings
from apimcp.policies.facts import tool_facts
from apimcp.policies.policy_set import PolicySet
from apimcp.policies.redaction import widened_schema
from apimcp.policies.rules import Rule
from apimcp.protocol import (
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    GetPromptResult,
    HttpRefusal,
    Implementation,
    McpHandler,
    Page,
    Prompt,
    PromptRef,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    ServerFeatures,
    Tool,
    ToolError,
    invalid_params,
)
from apimcp.protocol.errors import INVALID_REQUEST
from apimcp.protocol.observe import RequestObserver
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.toolsearch.discovery import Discovery
from apimcp.toolsearch.tools import CALL, DESCRIBE, NAMES, SEARCH, ToolSearchError, call_target

__all__ = ["ExpositionHandler", "ExpositionSettings", "Extras", "ToolSet", "tool_of"]


@dataclass(frozen=True, slots=True)
class ExpositionSettings:
    name: str
    title: str | None = None
    instructions: str | None = None
    cache_hints: Mapping[str, CacheHint] = field(default_factory=dict)
    """ttlMs/cacheScope per cacheable method for 2026-07-28 clients."""
    resource: ExpositionResource | None = None
    """The exposition as an OAuth protected resource: its tools may need scopes of their own."""
    observer: RequestObserver | None = None
    """Hears of every request answered (the plan's audit trail)."""
    calls: CallPath | None = None
    """What every call of its tools goes through (its rate limits, audit and telemetry for scripts' calls);
    None: nothing."""
    task_policy: TaskPolicy | None = None
    """When its tool calls become tasks (the plan's `tasks` mode); None: never."""
    tool_search: bool = False
    """List three tools (search_tools, describe_tools, call_tool) instead of every tool (`apimcp.toolsearch`)."""
    code_mode: CodeModeSetting = "off"
    """List search_tools, describe_tools and execute_code (`apimcp.codemode`); read_only: programs call only
    tools that change nothing. Takes the place of `tool_search`."""
    services: Sequence[str] = ()
    """The members' service names, in order, which search_tools can keep to (none: its tools have no service)."""
    policies: Sequence[Rule] = ()
    """The organization's rules, then the plan's (`apimcp.policies`): who may call what, with which arguments,
    and what their answers hide."""


def _discovery(
    page: Page[Tool], composition: Composition, members: Sequence[tuple[ToolSet, Backend]], services: Sequence[str]
) -> Discovery:
    """Search over the exposition's tools: ranked on their `METHOD /path` aliases too, filtered by each operation's
    member service (when named) and tags, and every tool's hints."""
    paths = rest_paths(composition.aliases)
    tags_of = {prepared.tool.name: prepared.operation.tags for tools, _ in members for prepared in tools.prepared}
    return Discovery(page.items, paths, _service_of(members, services), tags_of)


def rest_paths(aliases: Mapping[str, str]) -> dict[str, list[str]]:
    """Each tool's `METHOD /path` aliases (the others are operationIds, words of the name already), each once: the
    aliases hold it as written and as its signature key (`get /x`), and the discovery report ranks on it once."""
    paths: dict[str, list[str]] = {}
    for alias, name in aliases.items():
        if " /" in alias and all(known.casefold() != alias.casefold() for known in paths.get(name, ())):
            paths.setdefault(name, []).append(alias)
    return paths


def _service_of(members: Sequence[tuple[ToolSet, Backend]], services: Sequence[str]) -> dict[str, str]:
    """Each operation's tool name → its member's service name (when the members' names are known)."""
    return {
        prepared.tool.name: services[index]
        for index, (tools, _) in enumerate(members) if index < len(services)
        for prepared in tools.prepared
    }  # fmt: skip


def _policy_set(
    settings: ExpositionSettings, members: Sequence[tuple[ToolSet, Backend]], composition: Composition
) -> PolicySet | None:
    """The exposition's rules compiled for every tool a call may name (custom tools' hidden targets too)."""
    if not settings.policies:
        return None
    service_of = _service_of(members, settings.services)
    facts = {}
    for name, entry in composition.internal.items():
        operation = entry.operation_behind()
        facts[name] = tool_facts(entry.tool, operation, service_of.get(operation.tool_name, "") if operation else "")
    return PolicySet(settings.policies, facts)


def _listed(page: Page[Tool], policies: PolicySet | None) -> Page[Tool]:
    if policies is None:
        return page
    tools = []
    for tool in page.items:
        fields = policies.may_redact(tool.name)
        tools.append(replace(tool, output_schema=widened_schema(tool.output_schema, fields)) if fields else tool)
    return Page(items=tuple(tools))


T = TypeVar("T")


class _NoLoader:
    """For expositions built without a way to read contents: only inline resources are served."""

    async def backend_file(self, path: str, member: int) -> Loaded:
        raise ResourceUnavailable("this exposition reads no files from its backend")

    async def remote(self, url: str) -> Loaded:
        raise ResourceUnavailable("this exposition fetches no remote contents")


_NO_LOADER = _NoLoader()


def _merged(first: Page[T] | None, then: Page[T], key: Callable[[T], str]) -> Page[T]:
    """`first`'s items, then those of `then` whose key none of them has (artifacts win over MCP servers)."""
    if first is None:
        return then
    taken = {key(item) for item in first.items}
    return Page(items=(*first.items, *(item for item in then.items if key(item) not in taken)))


def _prompt_key(prompt: Prompt) -> str:
    return prompt.name


def _resource_key(resource: Resource) -> str:
    return resource.uri


def _template_key(template: ResourceTemplate) -> str:
    return template.uri_template


class ExpositionHandler(McpHandler):
    """Serves one exposition: its tools (operations and custom tools), prompts and resources."""

    def __init__(
        self,
        settings: ExpositionSettings,
        members: Sequence[tuple[ToolSet, Backend]],
        extras: Extras | None = None,
        loader: BackendLoader | None = None,
    ) -> None:
        """`loader` reads resources that are not inline (`file://` from the backend, `remoteContent`); none: only
        inline ones are served."""
        names = [p.operation.tool_name for tools, _ in members for p in tools.prepared]
        duplicates = sorted(name for name, count in Counter(names).items() if count > 1)
        if duplicates:
            raise ValueError(f"exposition {settings.name!r} offers several tools named {', '.join(duplicates)}")
        self.settings = settings
        self.observer = settings.observer
        resource = settings.resource
        self._access = ToolAccess(resource.settings.tool_scopes) if resource is not None else None
        self.calls = settings.calls or CallPath(settings.name, settings.name)
        """Every call of the exposition's tools, a client's or a script's, goes through it (`calls.py`)."""
        extras = replace(extras or Extras(), calls=self.calls)
        if self._access:
            extras = replace(extras, gate=self._script_gate)
        self.server_info = Implementation(name=settings.name, version=__version__, title=settings.title)
        self.instructions = settings.instructions
        self.composition: Composition = compose(members, extras)
        self._entries = self.composition.exposed
        self._policies = _policy_set(settings, members, self.composition)
        self.calls.govern(self._policies)
        self._page = _listed(self.composition.page, self._policies)
        """The tools as listed: output schemas admit what `redact` rules put in place of a value."""
        self._loader = loader
        self._search: Discovery | None = None
        """Search mode's discovery (None in code mode, which has its own, and when every tool is listed)."""
        self._code: CodeMode | None = None
        if settings.tool_search or settings.code_mode != "off":
            meta = CODE_MODE_NAMES if settings.code_mode != "off" else NAMES
            clash = sorted(meta & set(self._entries))
            if clash:
                raise ValueError(
                    f"exposition {settings.name!r} lists discovery tools and tools named {', '.join(clash)}"
                )
            discovery = _discovery(self._page, self.composition, members, settings.services)
            if settings.code_mode == "off":
                self._search = discovery
            else:
                if extras.runner is None:
                    raise ValueError(f"exposition {settings.name!r} is in code mode and was given no script runner")
                read_only = settings.code_mode == "read_only"
                self._code = CodeMode(discovery, extras.runner, extras.code_limits, read_only=read_only)
        prompts, resources = self.composition.prompts, self.composition.resources
        self._upstream = UpstreamOfferings(extras.upstreams)
        """The prompts, resources and templates of the exposition's MCP servers, after the artifacts' own."""
        self._prompts_page = _merged(prompts.page if prompts else None, self._upstream.prompts_page, _prompt_key)
        self._resources_page = _merged(
            resources.resources_page if resources else None, self._upstream.resources_page, _resource_key
        )
        self._templates_page = _merged(
            resources.templates_page if resources else None, self._upstream.templates_page, _template_key
        )
        offers_prompts = prompts is not None or bool(self._upstream.prompts_page.items)
        offers_resources = resources is not None or bool(
            self._upstream.resources_page.items or self._upstream.templates_page.items
        )
        self.features = ServerFeatures(
            tools=True,
            tools_list_changed=True,
            prompts=offers_prompts,
            prompts_list_changed=offers_prompts,
            resources=offers_resources,
            resources_list_changed=offers_resources,
            resources_subscribe=self._upstream.offers_resources(),
            completions=offers_prompts or (resources is not None and resources.has_templates),
            logging=extras.relays_logs,
            tasks=settings.task_policy is not None,
        )

    def cache_hint(self, method: str) -> CacheHint:
        return self.settings.cache_hints.get(method) or super().cache_hint(method)

    def tool_definition(self, name: str) -> Tool | None:
        if self._code is not None and name in CODE_MODE_NAMES:
            return self._code.definition(name)
        if self._search is not None and name in NAMES:
            return next(t for t in self._search.page.items if t.name == name)
        entry = self._entries.get(name)
        return entry.tool if entry is not None else None

    def task_policy(self, name: str) -> TaskPolicy | None:
        known = (
            name in self._entries
            or (self._search is not None and name == CALL)
            or (self._code is not None and name == EXECUTE)
        )
        return self.settings.task_policy if known else None

    def internal_tool(self, reference: str) -> ToolEntry | None:
        """What a script of another exposition reaches when it names `reference` in this one (through `calls`)."""
        return self.composition.find(reference)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        if self._code is not None:
            return self._code.page
        if self._search is not None:
            return self._search.page
        return self._visible(ctx)

    def _visible(self, ctx: RequestContext) -> Page[Tool]:
        """The tools the caller may call: those its token's scopes reach, that some rule would let it call."""
        access, policies = self._access, self._policies
        page = access.visible(ctx.caller, self._page) if access else self._page
        if policies is None or not policies.hides:
            return page
        visible = policies.visible(ctx.caller, ctx.source.client, ctx.revision.version)
        return Page(items=tuple(tool for tool in page.items if visible(tool.name)))

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        code, search = self._code, self._search
        try:
            if code is not None and name in CODE_MODE_NAMES:
                if name == EXECUTE:
                    return await code.execute(arguments, self._program_calls(ctx), self.calls.exposition_id)
                if name == SEARCH:  # the caller finds and describes only the tools it may call
                    return await code.search(arguments, self._allowed(ctx))
                return code.describe(arguments, self._allowed(ctx))
            if search is not None and name in NAMES:
                if name == SEARCH:
                    return await search.search(arguments, self._allowed(ctx))
                if name == DESCRIBE:
                    return search.describe(arguments, self._allowed(ctx))
                name, arguments = call_target(arguments)
        except (ToolSearchError, ProgramError) as exc:
            raise ToolError(str(exc)) from None
        entry = self._entries.get(name)
        if entry is None:
            raise invalid_params(f"Unknown tool: {name}", {"field": "name"})
        refused = code.refusal(name) if code is not None else None
        if refused is not None:
            raise ToolError(refused)
        if self._access:
            missing = self._access.missing(ctx.caller, name)
            if missing:
                raise self._lacks_scope(ctx, name, missing)
        return await self.calls.call(entry, ctx, arguments)

    def _allowed(self, ctx: RequestContext) -> frozenset[str] | None:
        """The tools the caller may call, when its token's scopes or the policies restrict them (None: every one)."""
        restricted = self._access or (self._policies is not None and self._policies.hides)
        return frozenset(t.name for t in self._visible(ctx).items) if restricted else None

    def _program_calls(self, ctx: RequestContext) -> Invoke:
        """How a program run for `ctx`'s request reaches the tools: each call found, refused or made exactly as the
        caller's own call of the tool would be (its scopes, the plan's read-only mode), through the exposition's
        call path (rate limits, audit and telemetry, recorded as made by execute_code)."""
        code, via, access = self._code, self.calls.via(EXECUTE), self._access
        assert code is not None

        async def invoke(ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
            name = ref.tool
            entry = self._entries.get(name) if ref.service is None else None
            if entry is None:
                raise self.calls.refused(name, ctx, invalid_params(f"Unknown tool: {name}", {"tool": name}), via)
            refused = code.refusal(name)
            if refused is None and access:
                refused = self._script_gate(ctx, name)
            if refused is not None:
                raise self.calls.refused(name, ctx, invalid_params(refused, {"tool": name}), via)
            return await self.calls.call(entry, ctx, arguments, depth, via)

        return invoke

    def _script_gate(self, ctx: RequestContext, tool: str) -> str | None:
        missing = self._access.missing(ctx.caller, tool) if self._access else ()
        return f"Calling {tool} needs the scope {' '.join(missing)}, which the access token lacks" if missing else None

    def _lacks_scope(self, ctx: RequestContext, tool: str, missing: Sequence[str]) -> HttpRefusal:
        """403 with an `insufficient_scope` challenge naming every scope the call needs (MCP scope step-up)."""
        resource = self.settings.resource
        assert resource is not None
        text = f"Calling {tool} needs the scope {' '.join(missing)}, which the access token lacks"
        source = ctx.source
        tool_scopes = self._access.needed(tool) if self._access else tuple(missing)
        needed = [*resource.settings.scopes, *(s for s in tool_scopes if s not in resource.settings.scopes)]
        challenge = resource.at(source.scheme, source.headers, source.path).challenge("insufficient_scope", text,
                                                                                       needed)  # fmt: skip
        return HttpRefusal(403, INVALID_REQUEST, text, [(b"www-authenticate", challenge)], {"scopes": list(missing)},
                           reason="insufficient_scope")  # fmt: skip

    async def list_prompts(self, ctx: RequestContext, cursor: str | None) -> Page[Prompt]:
        return self._prompts_page if self.features.prompts else await super().list_prompts(ctx, cursor)

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        got = await self._prompt(ctx, name, arguments)
        return await guarded_prompt(self.calls, ctx, name, got) if self.calls.guardrails else got

    async def _prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        prompts = self.composition.prompts
        if (prompts is None or name not in prompts) and self._upstream.has_prompt(name):
            return await self._upstream.get_prompt(ctx, name, arguments)
        if prompts is None:
            return await super().get_prompt(ctx, name, arguments)
        return prompts.get(name, arguments)

    async def list_resources(self, ctx: RequestContext, cursor: str | None) -> Page[Resource]:
        return self._resources_page if self.features.resources else await super().list_resources(ctx, cursor)

    async def list_resource_templates(self, ctx: RequestContext, cursor: str | None) -> Page[ResourceTemplate]:
        return self._templates_page

    async def subscribe_resource(self, ctx: RequestContext, uri: str) -> None:
        if not await self._upstream.subscribe(ctx, uri):
            resources = self.composition.resources
            if resources is None:
                raise ResourceNotFound(uri)  # an artifact's resource may be subscribed to: it is never updated

    async def read_resource(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        read = await self._read(ctx, uri)
        return await guarded_read(self.calls, ctx, uri, read) if self.calls.guardrails else read

    async def _read(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        resources = self.composition.resources
        if resources is not None:
            loader = self._loader
            try:
                return await resources.read(uri, loader.for_request(ctx) if loader is not None else _NO_LOADER)
            except ResourceNotFound:
                if not self._upstream:
                    raise
        read = await self._upstream.read(ctx, uri) if self._upstream else None
        if read is None:
            raise ResourceNotFound(uri)
        return read

    async def complete(
        self,
        ctx: RequestContext,
        ref: CompletionRef,
        argument: str,
        value: str,
        context_arguments: Mapping[str, str],
    ) -> Completion:
        if isinstance(ref, PromptRef):
            prompts = self.composition.prompts
            if (prompts is None or ref.name not in prompts) and self._upstream.has_prompt(ref.name):
                return Completion()  # an MCP server's prompt: its completions are not asked of it (yet)
            if prompts is None:
                raise invalid_params(f"Unknown prompt: {ref.name}", {"field": "ref"})
            return prompts.complete(ref.name, argument, value)
        resources = self.composition.resources
        if resources is None:
            raise invalid_params(f"Unknown resource template: {ref.uri}", {"field": "ref"})
        return resources.complete(ref.uri, argument, value)
