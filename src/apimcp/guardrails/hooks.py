"""The guardrail interface: hooks that see each call before it is made and its answer after.

A guardrail is an object with a `name` and two methods, called for every call of a tool of an exposition whose
plan lists it (a client's call, a script's, code mode's inner calls):

- `before_call(call)`: may report findings, replace the arguments (redacted), or block the call;
- `after_call(call, result)`: may report findings, replace the result, or withhold it. It also sees what
  `resources/read` and `prompts/get` give (`gateway/guarded_offerings.py`): a read's contents as embedded
  resources of a call of `resources/read`, a prompt's messages as the content of a call named as the prompt.

Both must be quick and must not block (no I/O): they run on every call, on the event loop, except `after_call`
on an answer too large to read on the loop (`shaping`), which runs in a worker thread. One that raises blocks the
call (a guard that fails does not let things through). A company adds its own as a Python entry point in the group
`apimcp.guardrails`: a callable that takes the `GuardrailSettings` a plan gives and returns the guardrail. The
built-in scanners (`scanning.py`) are made the same way.

```toml
[project.entry-points."apimcp.guardrails"]
acme_dlp = "acme_guard:make"   # plan: guardrails: [{use: acme_dlp, action: block, options: {...}}]
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from apimcp.protocol.caller import Caller
from apimcp.protocol.models import CallToolResult

Action = Literal["report", "redact", "block"]
ACTIONS: Final = ("report", "redact", "block")
Where = Literal["arguments", "answers"]


@dataclass(frozen=True, slots=True)
class GuardrailSettings:
    """What a plan says of one guardrail it uses."""

    use: str
    action: Action = "report"
    on: frozenset[Where] = frozenset({"arguments", "answers"})
    options: Mapping[str, Any] = field(default_factory=dict)
    """Anything else the guardrail takes (a company's own), as the plan writes it."""


@dataclass(frozen=True, slots=True)
class GuardedCall:
    tool: str
    exposition: str
    arguments: Mapping[str, Any]
    caller: Caller | None
    mirrored: bool = False
    """The answer's first text block is its structured content as JSON, read from the same bytes (as the gateway's
    own REST, GraphQL and gRPC tools answer): searching that text searches the structured content too, when it
    holds no escape (`scanning.answer_texts`)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """Something a guardrail found, said without what it found (its value never leaves the call)."""

    kind: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class Verdict:
    findings: tuple[Finding, ...] = ()
    block: str | None = None
    """Why the call (or its answer) must not go on: what the caller is told."""
    arguments: Mapping[str, Any] | None = None
    """before_call: the arguments to call with instead."""
    result: CallToolResult | None = None
    """after_call: the result to answer with instead."""


PASS: Final = Verdict()


class Guardrail(Protocol):
    name: str

    def before_call(self, call: GuardedCall) -> Verdict: ...

    def after_call(self, call: GuardedCall, result: CallToolResult) -> Verdict: ...
