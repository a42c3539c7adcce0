"""What an exposition serves, composed from its services' operations and its artifacts.

Done once when a snapshot is applied, never per request:

- every selected operation becomes an entry, reachable by tool name, operationId or `METHOD /path`;
- each custom tool becomes an entry; a declarative one replaces its target in the tool list (the target
  stays callable by scripts), a scripted one hides nothing;
- each output filter wraps the entry of the tool it names, for clients and scripts alike, and the tool's
  outputSchema becomes what the filter leaves;
- tools bound to a `ui://` resource carry `_meta.ui` (MCP Apps);
- prompts and resources are compiled into their catalogs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apimcp.artifacts.bundle import ArtifactBundle
from apimcp.artifacts.filter_runner import FilterRunner
from apimcp.artifacts.output_filters import FilterError
from apimcp.artifacts.prompts import PromptCatalog
from apimcp.artifacts.resources import ResourceCatalog
from apimcp.artifacts.scripting import ScriptRunner, ScriptSpecError, ToolRef
from apimcp.artifacts.targets import signature_key
from apimcp.backends.base import Backend
from apimcp.catalog.model import McpOfferings
from apimcp.codemode.limits import DEFAULT_LIMITS as DEFAULT_CODE_LIMITS
from apimcp.codemode.limits import CodeModeLimits
from apimcp.gateway.calls import CallPath, CallTarget
from apimcp.gateway.custom_tools import DeclarativeEntry, Gate, ScriptedEntry
from apimcp.gateway.member_backends import MemberBackend
from apimcp.gateway.tool_entries import FilteredEntry, OperationEntry, ToolEntry
from apimcp.gateway.toolset import ToolSet
from apimcp.protocol import Page, Tool
from apimcp.shaping.pool import INLINE, Shaper

log = logging.getLogger("apimcp.gateway")

CrossService = Callable[[str, str], CallTarget | None]
"""(`Service:version`, tool) → that tool in the organization's exposition of that service, with its path."""


@dataclass(frozen=True, slots=True)
class Extras:
    """What an exposition serves besides its operations, and what its artifacts need to run."""

    bundle: ArtifactBundle = field(default_factory=ArtifactBundle)
    runner: ScriptRunner | None = None
    """Runs scripted custom tools and code-mode programs (one per gateway: it owns the sandbox threads)."""
    code_limits: CodeModeLimits = DEFAULT_CODE_LIMITS
    """What one code-mode program may use (the gateway's settings)."""
    calls: CallPath = field(default_factory=lambda: CallPath("", ""))
    """The exposition's own call path, which its scripts' calls of its tools take (the handler gives it)."""
    filters: FilterRunner = field(default_factory=FilterRunner)
    """Compiles and applies output filters (one per gateway; large results are filtered by its shaper)."""
    shaper: Shaper = INLINE
    """Where large answers are read and checked (the gateway's shaping processes; in-process by default)."""
    cross_service: CrossService | None = None
    backends: Sequence[MemberBackend] = ()
    """Per member (in order): its backend as the calls made for a request reach it (`member_backends`: what they
    add for the request, telemetry); by default the member's backend as given, with nothing added."""
    gate: Gate | None = None
    """Whether the caller may call a tool a script names (its scopes): None when it may, else why not."""
    upstreams: Sequence[tuple[McpOfferings, MemberBackend]] = ()
    """The prompts, resources and templates of the exposition's MCP servers, with the member each is read
    through (`upstream_offerings`)."""
    relays_logs: bool = False
    """Some member is an MCP server, whose log messages during a call reach the client (which sets its level)."""


@dataclass(frozen=True, slots=True)
class Composition:
    exposed: Mapping[str, ToolEntry]
    """What clients list and call, by tool name."""
    internal: Mapping[str, ToolEntry]
    """What scripts may call by name: the exposed tools and the targets custom tools hide."""
    aliases: Mapping[str, str]
    """operationId and `METHOD /path` → tool name."""
    page: Page[Tool]
    prompts: PromptCatalog | None = None
    resources: ResourceCatalog | None = None

    def find(self, reference: str) -> ToolEntry | None:
        """The entry a script or an artifact names: tool name first, then operationId or `METHOD /path`."""
        entry = self.internal.get(reference)
        if entry is None:
            name = _alias_of(self.aliases, reference)
            entry = self.internal.get(name) if name is not None else None
        return entry


def _alias_of(aliases: Mapping[str, str], reference: str) -> str | None:
    """The tool an operationId or a signature (compared as `artifacts.targets` compares them) names."""
    return aliases.get(reference) or aliases.get(signature_key(reference) or reference)


def operation_entries(
    members: Sequence[tuple[ToolSet, Backend]], backends: Sequence[MemberBackend] = (), shaper: Shaper = INLINE
) -> dict[str, OperationEntry]:
    called = [*backends, *(MemberBackend(backend) for _, backend in members[len(backends) :])]
    return {
        p.tool.name: OperationEntry(p.tool, p.operation, member, p.input, p.output, shaper)
        for (tools, _), member in zip(members, called, strict=True)
        for p in tools.prepared
    }


def compose(members: Sequence[tuple[ToolSet, Backend]], extras: Extras) -> Composition:
    """The exposition's tools, prompts and resources. With no artifacts this is the operations alone."""
    base = operation_entries(members, extras.backends, extras.shaper)
    aliases: dict[str, str] = {}
    for operation_entry in base.values():
        operation = operation_entry.operation
        # as written too: a script's allow-list and its calls are compared as written
        for alias in (operation.operation_id, operation.signature, signature_key(operation.signature)):
            if alias:
                aliases.setdefault(alias, operation_entry.name)
    bundle = extras.bundle
    if bundle.empty:
        page = members[0][0].page if len(members) == 1 else Page(items=tuple(e.tool for e in base.values()))
        return Composition(exposed=base, internal=base, aliases=aliases, page=page)

    internal: dict[str, ToolEntry] = dict(base)
    provisional = Composition(exposed=base, internal=internal, aliases=aliases, page=Page(items=()))
    hidden: set[str] = set()
    custom: dict[str, ToolEntry] = {}
    declarative: dict[str, Mapping[str, Any]] = {}
    for name, spec in bundle.custom_tools.items():
        if "script" not in spec:
            declarative[name] = spec
        elif extras.runner is None:
            log.warning("custom tool %s is scripted, and this gateway runs no scripts: it is not served", name)
        else:
            try:
                lookup = _script_lookup(provisional, extras.calls, extras.cross_service)
                custom[name] = ScriptedEntry(
                    name, spec, extras.runner, lookup, _equivalents(aliases), extras.calls, extras.gate
                )
            except ScriptSpecError as exc:  # checked when attached; kept out rather than failing the exposition
                log.warning("custom tool %s cannot be served: %s", name, exc)
    while declarative:  # a declarative tool may call another one: build targets first (no loops: checked on attach)
        ready = {}
        for name, spec in declarative.items():
            reference = str(spec.get("tool", ""))
            target = custom.get(reference) if reference in bundle.custom_tools else provisional.find(reference)
            if target is not None or reference not in declarative:
                ready[name] = (spec, target)
        if not ready:
            log.warning("custom tools %s call each other in a loop: they are not served", ", ".join(declarative))
            break
        for name, (spec, target) in ready.items():
            del declarative[name]
            if target is None:
                log.warning("custom tool %s calls %r, which the exposition does not offer: it is not served",
                            name, spec.get("tool"))  # fmt: skip
                continue
            hidden.add(target.name)
            custom[name] = DeclarativeEntry(name, spec, target, extras.gate)
    internal.update(custom)

    for reference, spec in bundle.filters.items():
        found = provisional.find(reference)
        if found is None:
            log.warning("output filter for %r names no tool of the exposition: it is not applied", reference)
            continue
        try:
            internal[found.name] = FilteredEntry(found, extras.filters.compile(spec, found.name), extras.filters)
        except FilterError as exc:  # checked when attached; a file from an older gateway may still be wrong
            log.warning("output filter for %s cannot be applied: %s", found.name, exc)
    for entry in custom.values():  # a filter installed since wraps a target: the declarative tool calls through it
        if isinstance(entry, DeclarativeEntry):
            entry.stand_for(internal[entry.target_name])

    # Both are checked when attached; should a file get through anyway, the rest of the exposition is served.
    resources = prompts = None
    try:
        if bundle.resources or bundle.resource_templates:
            resources = ResourceCatalog(
                bundle.resources,
                bundle.resource_templates,
                resource_members=bundle.resource_members,
                template_members=bundle.template_members,
            )
    except ValueError as exc:
        log.warning("the exposition's resources cannot be served: %s", exc)
    try:
        prompts = PromptCatalog(bundle.prompts) if bundle.prompts else None
    except ValueError as exc:
        log.warning("the exposition's prompts cannot be served: %s", exc)
    also_named = _names_by_tool(aliases)  # a ui:// binding may name a tool by operationId or METHOD /path
    exposed: dict[str, ToolEntry] = {}
    for name in [*(n for n in base if n not in hidden and n not in custom), *(n for n in custom if n not in hidden)]:
        served = internal[name]
        ui = _ui_meta(resources, (name, *also_named.get(name, ()))) if resources is not None else None
        if ui is not None:
            served = served.with_tool(replace(served.tool, meta={**(served.tool.meta or {}), **ui}))
        exposed[name] = served
    return Composition(
        exposed=exposed,
        internal=internal,
        aliases=aliases,
        page=Page(items=tuple(e.tool for e in exposed.values())),
        prompts=prompts,
        resources=resources,
    )


def _names_by_tool(aliases: Mapping[str, str]) -> dict[str, list[str]]:
    """tool name → its operationId and `METHOD /path`."""
    named: dict[str, list[str]] = {}
    for alias, name in aliases.items():
        named.setdefault(name, []).append(alias)
    return named


def _equivalents(aliases: Mapping[str, str]) -> Callable[[str], list[str]]:
    named = _names_by_tool(aliases)

    def equivalents(reference: str) -> list[str]:
        name = _alias_of(aliases, reference) or reference
        return [reference, name, *named.get(name, ())]

    return equivalents


def _ui_meta(resources: ResourceCatalog, references: Sequence[str]) -> Mapping[str, Any] | None:
    for reference in references:
        meta = resources.tool_meta(reference)
        if meta is not None:
            return meta
    return None


def _script_lookup(
    composition: Composition, own: CallPath, cross_service: CrossService | None
) -> Callable[[ToolRef], CallTarget | None]:
    def lookup(ref: ToolRef) -> CallTarget | None:
        if ref.service is None:
            entry = composition.find(ref.tool)
            return CallTarget(entry, own) if entry is not None else None
        return cross_service(ref.service, ref.tool) if cross_service is not None else None

    return lookup
