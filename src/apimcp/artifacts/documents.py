"""Artifact documents (Prompts, Resources, CustomTools, ToolsOutputFilters), read and checked when attached.

reShapr's files are accepted exactly as written (`apiVersion: reshapr.io/v1alpha1`), and apimcp's own
`apimcp.dev/v1alpha1` has the same body. A document is checked in three steps, each refusing with the
JSON pointer of the fault: its kind, its kind's published schema (`schemas/<kind>.json`), then what a
schema cannot say (`rules`). `check_against` then checks it against the service it is attached to, so
a snapshot only ever carries documents whose every tool reference resolved when they were attached.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apimcp.artifacts import rules
from apimcp.artifacts.bundle import SECTIONS
from apimcp.artifacts.errors import ArtifactError, pointer
from apimcp.artifacts.schema_check import KINDS, schema_text, validate
from apimcp.artifacts.targets import find_target
from apimcp.catalog.model import Operation
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import parse
from apimcp.safety.yaml_loading import YamlLimits

__all__ = [
    "API_VERSIONS",
    "KINDS",
    "ArtifactDocument",
    "ArtifactError",
    "check_against",
    "find_target",
    "read_document",
    "schema_text",
]

API_VERSIONS = ("reshapr.io/v1alpha1", "apimcp.dev/v1alpha1")


@dataclass(frozen=True, slots=True)
class ArtifactDocument:
    kind: str
    api_version: str
    service_name: str
    service_version: str
    body: Mapping[str, Any]
    """The whole validated document as plain JSON data (what is stored, and what snapshots carry)."""
    capabilities: tuple[str, ...]
    """What it declares, in its order: prompt names, resource then template URIs, custom tool names, or
    the names of the tools it filters."""


def read_document(content: bytes, source: str, yaml_limits: YamlLimits | None = None) -> ArtifactDocument:
    """Parse (YAML or JSON, within `yaml_limits`) and check an artifact document; ArtifactError otherwise.

    `source` names the document in nothing but parse errors' context (a file name or URL)."""
    limits = yaml_limits or YamlLimits()
    body = _parse(content, source, limits)
    if not isinstance(body, dict):
        raise ArtifactError("", "an artifact is a YAML or JSON mapping (apiVersion, kind, service, ...)")
    _plain(body, [])
    kind = body.get("kind")
    if kind not in KINDS:
        problem = "is missing" if kind is None else f"is {orjson.dumps(kind).decode()[:60]}, which is not a kind"
        raise ArtifactError("/kind", f"the kind {problem}; artifacts are one of {', '.join(KINDS)}")
    validate(kind, body)
    rules.check(kind, body)
    capabilities = tuple(name for section in SECTIONS[kind] for name in body.get(section, {}))
    return ArtifactDocument(
        kind=kind,
        api_version=body["apiVersion"],
        service_name=body["service"]["name"],
        service_version=body["service"]["version"],
        body=body,
        capabilities=capabilities,
    )


def _parse(content: bytes, source: str, limits: YamlLimits) -> Any:
    """The document, read as the importers read descriptions (JSON first, then bounded YAML)."""
    if len(content) > limits.max_expanded_size:
        raise ArtifactError("", f"{source} is larger than the {limits.max_expanded_size} bytes allowed")
    try:
        return parse(content, source, limits)
    except SpecError as exc:
        raise ArtifactError("", str(exc)) from None


def _plain(value: Any, path: list[str | int]) -> None:
    """Refuse what JSON cannot hold (keys that are not strings, YAML sets or binaries, infinities), so the
    document validates, stores and travels as JSON unchanged."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ArtifactError(pointer([*path, str(key)]), f"keys are strings; quote {key!r} in YAML")
            _plain(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _plain(item, [*path, index])
    elif isinstance(value, float) and not math.isfinite(value):
        raise ArtifactError(pointer(path), "JSON has no infinite or NaN numbers")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise ArtifactError(pointer(path), f"a {type(value).__name__} is not JSON data")


def check_against(
    document: ArtifactDocument,
    operations: Sequence[Operation],
    extra_tool_names: Collection[str] = (),
    *,
    service: tuple[str, str] | None = None,
) -> None:
    """Check that `document` fits the service it is attached to: `service` (name, version) when given, and
    every tool it names. A declarative target or a tool a script calls in its own service is an operation
    (by tool name, operationId or signature) or a custom tool of the same document; a filtered tool and a
    tool a ui:// resource belongs to may also be a custom tool of another artifact (`extra_tool_names`)."""
    if service is not None and (document.service_name, document.service_version) != service:
        raise ArtifactError(
            "/service",
            f"the file is for {document.service_name} {document.service_version}, "
            f"not {service[0]} {service[1]}: fix service.name and service.version",
        )
    body = document.body
    custom = body.get("customTools", {}) if document.kind == "CustomTools" else {}
    everywhere = set(custom) | set(extra_tool_names)

    def known(name: str, also: Collection[str]) -> bool:
        return find_target(name, operations) is not None or name in also

    for name, tool in custom.items():
        _not_an_operation_name(name, tool, operations)
        if "tool" in tool and not known(tool["tool"], set(custom) - {name}):
            raise ArtifactError(pointer(["customTools", name, "tool"]), _unknown(tool["tool"], "operation"))
        for index, called in enumerate(tool.get("tools", ())):
            if "service" not in called and not known(called["tool"], custom):
                where = pointer(["customTools", name, "tools", index, "tool"])
                raise ArtifactError(where, _unknown(called["tool"], "tool"))
    _no_declarative_loop(custom, operations)
    for name in body.get("filters", {}) if document.kind == "ToolsOutputFilters" else ():
        if not known(name, everywhere):
            raise ArtifactError(pointer(["filters", name]), _unknown(name, "tool"))
    for uri, resource in body.get("resources", {}).items() if document.kind == "Resources" else ():
        for index, binding in enumerate(resource.get("tools", ())):
            name = binding if isinstance(binding, str) else next(iter(binding))
            if not known(name, everywhere):
                raise ArtifactError(pointer(["resources", uri, "tools", index]), _unknown(name, "tool"))


def _unknown(name: str, what: str) -> str:
    return f"{name!r} is no {what} of the service (by tool name, operationId or METHOD /path) nor a custom tool"


def _not_an_operation_name(name: str, tool: Mapping[str, Any], operations: Sequence[Operation]) -> None:
    """A custom tool may take the name of the operation it replaces (its declarative target), of no other."""
    clashing = next((op for op in operations if op.tool_name == name), None)
    if clashing is None:
        return
    target = find_target(tool["tool"], operations) if "tool" in tool else None
    if target is not clashing:
        raise ArtifactError(
            pointer(["customTools", name]),
            f"{name} is already the tool of {clashing.signature}; give the custom tool another name",
        )


def _no_declarative_loop(custom: Mapping[str, Mapping[str, Any]], operations: Sequence[Operation]) -> None:
    """Declarative tools targeting declarative tools of the same document must end at an operation."""
    for start in custom:
        seen = [start]
        current = custom[start]
        while "tool" in current and find_target(current["tool"], operations) is None:
            following = current["tool"]
            if following in seen:
                loop = " -> ".join([*seen[seen.index(following) :], following])
                raise ArtifactError(pointer(["customTools", start, "tool"]), f"the tools call each other: {loop}")
            seen.append(following)
            current = custom.get(following, {})
