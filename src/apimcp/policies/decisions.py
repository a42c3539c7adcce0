"""What the rules say of a call, and what they are told of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from apimcp.protocol.caller import Caller


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules say of one call."""

    effect: Literal["allow", "deny", "approve"]
    rule: str | None = None
    """The rule that decided (None: no rule held, and calls are allowed by default)."""
    message: str | None = None
    redact: tuple[str, ...] = ()
    """The keys hidden in the answer, by the `redact` rules in `redacted_by`."""
    redacted_by: tuple[str, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    """(rule, why) for each condition that could not be evaluated (counted as `policy_set.py` says)."""
    approval_seconds: float | None = None
    """For `approve`: the deciding rule's lifetime of an answer (None: the default)."""
    approver: Literal["caller", "admin"] = "caller"
    """For `approve`: who answers (the deciding rule's `approver`)."""

    @property
    def allowed(self) -> bool:
        """Whether the call may go on (an `approve` decision: once a person approves it)."""
        return self.effect != "deny"

    def refusal(self, tool: str) -> str:
        """What the caller is told of a denial (the rule's name, its message; never the facts)."""
        if self.rule is None:
            return f"Calling {tool} is denied: {self.message}"
        text = f"Calling {tool} is denied by the policy rule {self.rule!r}"
        return f"{text}: {self.message}" if self.message else text


ALLOWED = Decision("allow")


@dataclass(frozen=True, slots=True)
class CallFacts:
    """A call's own facts, as its request gives them."""

    caller: Caller | None
    client: str | None
    revision: str
    arguments: Mapping[str, Any]
    time: datetime | None = None
