"""A policy rule as an operator writes it: a name, a CEL condition, and what happens when it holds.

```yaml
policies:
  - name: contractors-read-only
    when: '"contractors" in claims.groups && !tool.read_only'
    effect: deny
    message: Contractors may only read.
  - name: no-emails-for-partners
    when: caller.subject == "partner-agent"
    effect: redact
    fields: [email, phone]
```

Rules are checked here, once, where they are written (a plan saved, a configuration file read): every field, the
size of each, and the expression compiled. What they mean at call time is `policy_set.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast, get_args

import cel

Effect = Literal["allow", "deny", "approve", "redact"]
EFFECTS: Final[tuple[str, ...]] = get_args(Effect)
Approver = Literal["caller", "admin"]
APPROVERS: Final[tuple[str, ...]] = get_args(Approver)

VARIABLES: Final[frozenset[str]] = frozenset({"caller", "claims", "tool", "args", "now"})
"""What a condition may name (`facts.py` says what each holds)."""

MAX_RULES: Final = 200
MAX_EXPRESSION: Final = 2048
MAX_MESSAGE: Final = 512
MAX_FIELDS: Final = 50
MAX_COMPREHENSIONS: Final = 1
"""Macros that loop (`all`, `exists`, `exists_one`, `map`, `filter`) per condition: one keeps a rule's cost linear in
the size of the call's arguments, which callers choose; two could nest."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_FIELD = re.compile(r"[^\s.][^\s]{0,127}")
_LOOPS = re.compile(r"\.\s*(all|exists|exists_one|map|filter)\s*\(")
_BOUND = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_KEYS: Final = frozenset({"name", "when", "effect", "message", "fields", "approval_seconds", "approver"})
MAX_APPROVAL_SECONDS: Final = 3600


class PolicyError(ValueError):
    """Rules that cannot be used; the message names the rule (by its name or position) and what is wrong."""


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    when: str
    """A CEL expression over `VARIABLES` that is true when the rule applies."""
    effect: Effect
    message: str | None = None
    """For `deny`: what the caller is told (the rule's name is always said); for `approve`: what the question
    adds after "Approve delete_book with bookId=3?"."""
    fields: tuple[str, ...] = ()
    """For `redact`: the keys whose values are hidden wherever they appear in an answer's JSON."""
    approval_seconds: float | None = None
    """For `approve`: how long after the question an answer is taken (`approval.APPROVAL_SECONDS` by default)."""
    approver: Approver = "caller"
    """For `approve`: who says yes: the person behind the caller's client (`approval.py`), or an administrator of
    the organization in the console or the CLI, for agents acting alone (`admin_approval.py`)."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "when": self.when, "effect": self.effect}
        if self.message is not None:
            out["message"] = self.message
        if self.fields:
            out["fields"] = list(self.fields)
        if self.approval_seconds is not None:
            out["approval_seconds"] = self.approval_seconds
        if self.approver != "caller":
            out["approver"] = self.approver
        return out


def compile_condition(when: str) -> cel.Program:
    """`when` compiled, or a PolicyError saying why not (syntax, a variable that does not exist, loops)."""
    if len(when) > MAX_EXPRESSION:
        raise PolicyError(f"its condition is longer than {MAX_EXPRESSION} characters")
    if len(_LOOPS.findall(when)) > MAX_COMPREHENSIONS:
        raise PolicyError(f"its condition loops more than {MAX_COMPREHENSIONS} time (all, exists, map, filter)")
    try:
        program = cel.compile(when)
    except (ValueError, RuntimeError) as exc:
        raise PolicyError(f"its condition is not valid CEL: {_first_line(str(exc))}") from None
    bound = set(_BOUND.findall(when))  # a macro's own variable (`args.items.exists(i, i.price > 10)`)
    unknown = sorted(set(program.references()["variables"]) - VARIABLES - bound)
    if unknown:
        known = ", ".join(sorted(VARIABLES))
        raise PolicyError(f"its condition names {', '.join(unknown)}, which is not one of {known}")
    return program


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join(lines[:2])[:300]


def parse_rules(raw: object, where: str = "policies") -> tuple[Rule, ...]:
    """`raw` (a list of rule objects, as YAML or JSON gives it; None for none) as rules; PolicyError otherwise."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise PolicyError(f"{where} is a list of rules")
    if len(raw) > MAX_RULES:
        raise PolicyError(f"{where} holds more than {MAX_RULES} rules")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        label = f"{where}[{index}]"
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            label = f"{where}[{index}] ({item['name'][:64]})"
        try:
            rule = _rule(item)
        except PolicyError as exc:
            raise PolicyError(f"{label}: {exc}") from None
        if rule.name in seen:
            raise PolicyError(f"{label}: another rule is named {rule.name!r}")
        seen.add(rule.name)
        rules.append(rule)
    return tuple(rules)


def _rule(item: object) -> Rule:
    if not isinstance(item, Mapping):
        raise PolicyError("a rule is an object with name, when and effect")
    extra = sorted(str(key) for key in item if key not in _KEYS)
    if extra:
        raise PolicyError(f"unknown key {', '.join(extra)} (a rule has {', '.join(sorted(_KEYS))})")
    name, when, effect = item.get("name"), item.get("when"), item.get("effect")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PolicyError("name is 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit")
    if not isinstance(when, str) or not when.strip():
        raise PolicyError("when is a CEL expression (true applies the rule to every call)")
    if effect not in EFFECTS:
        raise PolicyError(f"effect is one of {', '.join(EFFECTS)}, not {effect!r}")
    message = item.get("message")
    if message is not None and (not isinstance(message, str) or len(message) > MAX_MESSAGE):
        raise PolicyError(f"message is a text of at most {MAX_MESSAGE} characters")
    if message is not None and effect not in ("deny", "approve"):
        raise PolicyError(
            "message is what a deny rule tells the caller, or an approve rule asks; this rule does neither"
        )
    fields = _fields(item.get("fields"), effect)
    seconds = item.get("approval_seconds")
    if seconds is not None:
        if effect != "approve":
            raise PolicyError(
                "approval_seconds is how long an approve rule's answer is taken; this rule does not approve"
            )
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not 0 < seconds <= MAX_APPROVAL_SECONDS:
            raise PolicyError(f"approval_seconds is a number of seconds above 0, at most {MAX_APPROVAL_SECONDS}")
    approver = item.get("approver", "caller")
    if approver != "caller" and effect != "approve":
        raise PolicyError("approver is who approves an approve rule's calls; this rule does not approve")
    if approver not in APPROVERS:
        raise PolicyError(f"approver is one of {', '.join(APPROVERS)}, not {approver!r}")
    if approver == "admin" and seconds is not None and seconds < 1:
        raise PolicyError("approval_seconds is at least 1 for an administrator's approval (approver: admin)")
    compile_condition(when)
    return Rule(name=name, when=when, effect=cast(Effect, effect), message=message, fields=fields,
                approval_seconds=float(seconds) if seconds is not None else None,
                approver=cast(Approver, approver))  # fmt: skip


def _fields(raw: object, effect: object) -> tuple[str, ...]:
    if effect != "redact":
        if raw is not None:
            raise PolicyError("fields are what a redact rule hides; this rule does not redact")
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes) or not raw:
        raise PolicyError("a redact rule lists the fields it hides (fields: [email, phone])")
    if len(raw) > MAX_FIELDS:
        raise PolicyError(f"fields holds more than {MAX_FIELDS} names")
    for field in raw:
        if not isinstance(field, str) or not _FIELD.fullmatch(field):
            raise PolicyError(f"fields are key names of 1 to 128 characters without spaces, not {field!r}")
    return tuple(dict.fromkeys(raw))


def exposition_rules(exposition: Mapping[str, Any]) -> tuple[Rule, ...]:
    """The rules of an exposition as a snapshot or a configuration file carries them: its organization's
    (`organization_policies`), then its plan's (`policies`). A rule that cannot be read fails the exposition
    rather than letting it serve without it."""
    return (*parse_rules(exposition.get("organization_policies"), "organization policies"),
            *parse_rules(exposition.get("policies"), "policies"))  # fmt: skip
