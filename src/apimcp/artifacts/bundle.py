"""The artifacts one exposition serves, merged: several files of a kind merge by key, first attached wins.

A snapshot carries each member's selected artifacts in attachment order as `{name, kind, document}`,
documents already validated by `documents.read_document`. Merging keeps the first declaration of each
prompt name, resource URI, template, custom tool and filtered tool, as reShapr does, so attaching a
second file never silently changes what the first one defined.
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


def merge(artifacts: Iterable[Mapping[str, Any]]) -> ArtifactBundle:
    """One bundle from `{kind, document}` entries in attachment order; unknown kinds are ignored (a newer
    control plane may send kinds this gateway does not know yet)."""
    merged: dict[str, dict[str, Mapping[str, Any]]] = {name: {} for name in _FIELD_OF.values()}
    for artifact in artifacts:
        document = artifact.get("document") or {}
        for section in SECTIONS.get(artifact.get("kind", ""), ()):
            target = merged[_FIELD_OF[section]]
            for key, spec in (document.get(section) or {}).items():
                target.setdefault(key, spec)
    return ArtifactBundle(**merged)
