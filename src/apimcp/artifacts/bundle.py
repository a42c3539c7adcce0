"""The artifacts one exposition serves, merged: several files of a kind merge by key, first attached wins.

A snapshot carries each member's selected artifacts in attachment order as `{name, kind, document}`,
documents already validated by `documents.read_document`. Merging keeps the first declaration of each
prompt name, resource URI, template, custom tool and filtered tool, as reShapr does, so attaching a
second file never silently changes what the first one defined. It remembers which member declared each
resource and template: a `file://` one is read from that member's backend, with its credentials, not from
another service's of the exposition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SECTIONS = {
    "Prompts": ("prompts",),
    "Resources": ("resources", "resourceTemplates"),
    "CustomTools": ("customTools",),
    "ToolsOutputFilters": ("filters",),
}
"""Which sections of a document each kind contributes."""


@dataclass(frozen=True, slots=True)
class ArtifactBundle:
    prompts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resource_templates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    custom_tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    filters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resource_members: Mapping[str, int] = field(default_factory=dict)
    """Resource URI → the index, among the exposition's members, of the one whose artifacts declared it."""
    template_members: Mapping[str, int] = field(default_factory=dict)
    """The same for resource templates."""

    @property
    def empty(self) -> bool:
        return not (self.prompts or self.resources or self.resource_templates or self.custom_tools or self.filters)


_FIELD_OF = {
    "prompts": "prompts",
    "resources": "resources",
    "resourceTemplates": "resource_templates",
    "customTools": "custom_tools",
    "filters": "filters",
}


def merge(members: Iterable[Iterable[Mapping[str, Any]]]) -> ArtifactBundle:
    """One bundle from each member's `{kind, document}` entries in attachment order, members in the exposition's
    order; unknown kinds are ignored (a newer control plane may send kinds this gateway does not know yet)."""
    merged: dict[str, dict[str, Mapping[str, Any]]] = {name: {} for name in _FIELD_OF.values()}
    declared_by: dict[str, dict[str, int]] = {name: {} for name in _FIELD_OF.values()}
    for member, artifacts in enumerate(members):
        for artifact in artifacts:
            document = artifact.get("document") or {}
            for section in SECTIONS.get(artifact.get("kind", ""), ()):
                name = _FIELD_OF[section]
                for key, spec in (document.get(section) or {}).items():
                    if key not in merged[name]:
                        merged[name][key] = spec
                        declared_by[name][key] = member
    return ArtifactBundle(
        **merged, resource_members=declared_by["resources"], template_members=declared_by["resource_templates"]
    )
