"""What the runner runs: a scripted custom tool (its source and the tools it may call), or a code-mode program."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

ScriptKind = Literal["script", "program"]
"""`script`: a custom tool's body, given `input` and `rs` (`prelude.py`); `program`: the body of an async function
given `tools`, whose calls are awaited (`program_prelude.py`, code mode)."""


class ScriptSpecError(ValueError):
    """A scripted custom tool's `script` or `tools` is not usable."""


@dataclass(frozen=True, slots=True)
class ToolRef:
    """A tool a script calls: `service` is "Name:version", or None for the script's own service."""

    service: str | None
    tool: str

    def __str__(self) -> str:
        return f"tool '{self.tool}'" if self.service is None else f"tool '{self.tool}' of service '{self.service}'"


@dataclass(frozen=True, slots=True)
class Script:
    tool_name: str
    source: str
    allowed: frozenset[ToolRef] | None
    """The exhaustive allow-list: a call to any other tool is refused. None: the `Invoke` decides alone (code mode,
    whose tools are those the caller may call)."""
    kind: ScriptKind = "script"
    label: str = ""
    """How messages name the run (`subject`); empty: "Custom tool '<tool_name>'"."""

    @property
    def subject(self) -> str:
        return self.label or f"Custom tool '{self.tool_name}'"

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> Script:
        """Read one entry of a CustomTools document's `customTools` (its `script` and `tools`)."""
        source = spec.get("script")
        if not isinstance(source, str) or not source.strip():
            raise ScriptSpecError(f"custom tool '{name}': script must be non-empty JavaScript")
        try:
            source.encode()
        except UnicodeEncodeError as exc:  # the engine takes UTF-8
            raise ScriptSpecError(f"custom tool '{name}': script is not valid Unicode") from exc
        entries = spec.get("tools", ())
        if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
            raise ScriptSpecError(f"custom tool '{name}': tools must be a list of {{tool, service}}")
        allowed = set()
        for index, entry in enumerate(entries):
            where = f"custom tool '{name}': tools[{index}]"
            if not isinstance(entry, Mapping):
                raise ScriptSpecError(f"{where} must be a mapping with a 'tool'")
            tool = entry.get("tool")
            if not isinstance(tool, str) or not tool:
                raise ScriptSpecError(f"{where}.tool must be a non-empty string")
            service = entry.get("service")
            if service is not None:
                label, _, version = service.rpartition(":") if isinstance(service, str) else ("", "", "")
                if not label or not version:
                    raise ScriptSpecError(f"{where}.service must be 'Name:version', not {service!r}")
            allowed.add(ToolRef(service, tool))
        return cls(tool_name=name, source=source, allowed=frozenset(allowed))
