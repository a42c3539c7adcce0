"""What search_tools can narrow a search to: a member service, a tag of the API description, read-only tools.

Built once per exposition (per snapshot) from what the gateway knows of each tool: the service of the member
whose operation it is, the operation's tags (OpenAPI tags; `query` or `mutation` for GraphQL; the service's
full name for gRPC) and its `readOnlyHint` (GET/HEAD/OPTIONS/TRACE, GraphQL queries, gRPC methods without
side effects). Custom tools belong to no service and carry no tags; they are read-only only if annotated so.

A search narrowed by a filter ranks only the tools it leaves, among those the caller may call. What a
filter refuses never depends on tools the caller may not call, so they stay invisible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from apimcp.protocol.models import Tool
from apimcp.toolsearch.errors import ToolSearchError

MAX_NAMED = 30
"""Known services or tags an error names at most."""
MAX_VALUE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Facets:
    services: Mapping[str, frozenset[str]]
    """Service name → its tools (the exposition's members, in order)."""
    tags: Mapping[str, frozenset[str]]
    """Tag, case-folded → its tools."""
    tag_names: Mapping[str, str]
    """Tag, case-folded → as the description writes it."""
    read_only: frozenset[str]
    longest: Mapping[str, int] = field(default_factory=dict)
    """By filter (`service`, `tag`): how long a value may be, the longest name it knows or MAX_VALUE_CHARS."""

    @classmethod
    def of(cls, tools: Iterable[Tool], service_of: Mapping[str, str], tags_of: Mapping[str, Sequence[str]]) -> Facets:
        """The facets of `tools`: `service_of` and `tags_of` by tool name (tools missing from them have none)."""
        services: dict[str, set[str]] = defaultdict(set)
        tags: dict[str, set[str]] = defaultdict(set)
        tag_names: dict[str, str] = {}
        read_only = set()
        for tool in tools:
            service = service_of.get(tool.name)
            if service is not None:
                services[service].add(tool.name)
            for tag in tags_of.get(tool.name, ()):
                tags[tag.casefold()].add(tool.name)
                tag_names.setdefault(tag.casefold(), tag)
            if tool.annotations is not None and tool.annotations.read_only_hint is True:
                read_only.add(tool.name)
        return cls(
            services={s: frozenset(n) for s, n in services.items()},
            tags={t: frozenset(n) for t, n in tags.items()},
            tag_names=tag_names,
            read_only=frozenset(read_only),
            longest={
                "service": max([MAX_VALUE_CHARS, *map(len, services)]),
                "tag": max([MAX_VALUE_CHARS, *map(len, tag_names.values())]),
            },
        )

    def narrowed(self, arguments: Mapping[str, Any], allowed: Set[str] | None) -> Set[str] | None:
        """The tools a search may return: those `allowed` (every tool when None) that the filters in
        `arguments` (`service`, `tag`, `readOnly`) keep; None when nothing narrows the search."""
        kept = allowed
        service = arguments.get("service")
        if service is not None:
            kept = _within(kept, self._service(service, allowed))
        tag = arguments.get("tag")
        if tag is not None:
            kept = _within(kept, self._tag(tag, allowed))
        read_only = arguments.get("readOnly")
        if read_only is not None and not isinstance(read_only, bool):
            raise ToolSearchError('"readOnly" must be true (only tools that change nothing) or false')
        if read_only:
            kept = _within(kept, self.read_only)
        return kept

    def _service(self, value: object, allowed: Set[str] | None) -> frozenset[str]:
        text = _text("service", value, self.longest.get("service", MAX_VALUE_CHARS))
        found = self.services.get(text)
        if found is None:
            found = next((n for s, n in self.services.items() if s.casefold() == text.casefold()), None)
        if found is not None and (allowed is None or not found.isdisjoint(allowed)):
            return found
        services = {  # the caller's: a service none of whose tools it may call is not named to it
            name: tools for name, tools in self.services.items() if allowed is None or not tools.isdisjoint(allowed)
        }
        known = f"its services: {_listed(services)}" if services else "it names no services"
        raise ToolSearchError(f'"service" names no service of this server: {text!r}; {known}')

    def _tag(self, value: object, allowed: Set[str] | None) -> frozenset[str]:
        text = _text("tag", value, self.longest.get("tag", MAX_VALUE_CHARS))
        found = self.tags.get(text.casefold())
        if found is None or (allowed is not None and found.isdisjoint(allowed)):  # the caller's tools only
            known = sorted(
                self.tag_names[t] for t, n in self.tags.items() if allowed is None or not n.isdisjoint(allowed)
            )
            raise ToolSearchError(f"no tool has the tag {text!r}; tags: {_listed(known) if known else 'none'}")
        return found


def _within(kept: Set[str] | None, names: frozenset[str]) -> frozenset[str]:
    return names if kept is None else names.intersection(kept)


def _text(field: str, value: object, most: int) -> str:
    """`value` as a name to look for: a string, as long as a known name at most (the enum lists them all)."""
    if not isinstance(value, str) or not value or len(value) > most:
        raise ToolSearchError(f'"{field}" must be a string of 1 to {most} characters')
    return value


def _listed(names: Iterable[str]) -> str:
    every = list(names)
    shown = ", ".join(every[:MAX_NAMED])
    return shown + (f" and {len(every) - MAX_NAMED} more" if len(every) > MAX_NAMED else "")
