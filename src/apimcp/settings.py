"""The operator's settings: every limit of docs/security.md, read from `APIMCP_*` environment variables.

Each group of limits is a frozen dataclass owned by the layer it bounds, with safe defaults; this
module only names them and reads the environment, once, when a server command starts. A variable
is named after its group and field: `APIMCP_MCP_MAX_BODY_BYTES` sets `EndpointLimits.max_body_bytes`.
Values are plain numbers (bytes, seconds, counts), but for a field typed `str` (the proxies
`APIMCP_FORWARDED_ALLOW_IPS` names), which its group checks. A variable that does not parse, or a value
its group refuses, stops the command with a message naming the variable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, get_type_hints

from apimcp.artifacts.filter_runner import FilterLimits
from apimcp.artifacts.scripting import ScriptLimits
from apimcp.codemode.limits import CodeModeLimits
from apimcp.control.import_pool import ImportCapacity
from apimcp.control.limits import ApiLimits, UpstreamRefresh
from apimcp.importers.openapi.schemas import SchemaLimits
from apimcp.protocol.limits import EndpointLimits
from apimcp.protocol.sessions import SessionLimits
from apimcp.protocol.tasks.limits import TaskLimits
from apimcp.safety.fetch import FetchLimits
from apimcp.safety.yaml_loading import YamlLimits
from apimcp.servers.forwarded_headers import ForwardedHeaders
from apimcp.servers.head_limits import HeadLimits
from apimcp.shaping.limits import ShapingLimits

PREFIX = "APIMCP_"


class SettingsError(ValueError):
    """A variable that does not parse or that its group refuses; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Every group of limits; the defaults are the groups' own."""

    mcp: EndpointLimits = field(default_factory=EndpointLimits)
    sessions: SessionLimits = field(default_factory=SessionLimits)
    tasks: TaskLimits = field(default_factory=TaskLimits)
    head: HeadLimits = field(default_factory=HeadLimits)
    forwarded: ForwardedHeaders = field(default_factory=ForwardedHeaders)
    api: ApiLimits = field(default_factory=ApiLimits)
    fetch: FetchLimits = field(default_factory=FetchLimits)
    yaml: YamlLimits = field(default_factory=YamlLimits)
    imports: ImportCapacity = field(default_factory=ImportCapacity)
    schema: SchemaLimits = field(default_factory=SchemaLimits)
    scripts: ScriptLimits = field(default_factory=ScriptLimits)
    code_mode: CodeModeLimits = field(default_factory=CodeModeLimits)
    filters: FilterLimits = field(default_factory=FilterLimits)
    shaping: ShapingLimits = field(default_factory=ShapingLimits)
    upstreams: UpstreamRefresh = field(default_factory=UpstreamRefresh)


def variables() -> Iterator[tuple[str, str, str, Any]]:
    """(variable, group, field, default) of every setting, in the order of `Settings`."""
    defaults = Settings()
    for group in fields(Settings):
        limits = getattr(defaults, group.name)
        for item in fields(limits):
            yield f"{PREFIX}{group.name.upper()}_{item.name.upper()}", group.name, item.name, getattr(limits, item.name)


def from_environment(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the environment gives (defaults where a variable is unset or empty)."""
    environ = os.environ if environ is None else environ
    groups: dict[str, Any] = {}
    for group in fields(Settings):
        default = getattr(Settings(), group.name)
        kinds = get_type_hints(type(default))
        given: dict[str, Any] = {}
        for item in fields(default):
            variable = f"{PREFIX}{group.name.upper()}_{item.name.upper()}"
            raw = environ.get(variable, "").strip()
            if raw:
                kind = kinds[item.name]
                given[item.name] = raw if kind is str else _number(variable, raw, kind)
        if given:
            try:
                groups[group.name] = replace(default, **given)
            except ValueError as exc:
                named = ", ".join(f"{PREFIX}{group.name.upper()}_{name.upper()}" for name in given)
                raise SettingsError(f"{named}: {exc}") from None
    return Settings(**groups)


def _number(variable: str, raw: str, kind: type) -> int | float:
    try:
        value: int | float = int(raw) if kind is int else float(raw)
    except ValueError:
        expected = "a whole number" if kind is int else "a number"
        raise SettingsError(f"{variable}: expected {expected}, got {raw!r}") from None
    if not math.isfinite(value):  # NaN and infinities would disable a limit
        raise SettingsError(f"{variable}: expected a finite number, got {raw!r}")
    return value
