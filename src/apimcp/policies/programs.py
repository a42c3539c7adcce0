"""Rules as CEL programs: each on its own, and a tool's rules combined into programs that find the first that
holds in one evaluation.

A combined program is `(r0) ? 0 : ((r1) ? 1 : ... : -1)`: it evaluates the rules in order and stops at the first
that holds, as the rules' meaning says. CEL parsers bound how deeply an expression nests (cel-rust: 96), and
each rule nests one conditional deeper, so a long list is cut into programs of `CHAIN_LENGTH` rules, evaluated
in turn. When a program fails (a condition that cannot be evaluated), its rules are evaluated one by one to find
which, and the failure counts as the meaning says.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Final, Literal

import cel

from apimcp.policies.decisions import ALLOWED, Decision
from apimcp.policies.rules import VARIABLES, Rule

log = logging.getLogger("apimcp.policies")

CHAIN_LENGTH: Final = 24
UNDECIDED: Final = object()
"""A condition the tool's facts alone do not decide."""

Chain = tuple[tuple[cel.Program, int], ...]
"""Programs, each answering the position of the first of its rules that holds (-1: none), with the position of its
first rule in the tool's list."""

_KEY = {name: re.compile(rf"(?<![\w.]){name}\s*\.\s*([A-Za-z_]\w*)\b(?!\s*\()") for name in ("tool", "args", "claims")}
"""`args.bookId`, not `args.exists(...)`: a macro or a method on the map reads it whole."""
_NAMED = {name: re.compile(rf"(?<![\w.]){name}(?!\w)") for name in ("tool", "args", "claims")}


class CompiledRule:
    """One rule, compiled on its own."""

    __slots__ = ("index", "program", "rule", "uses")

    def __init__(self, index: int, rule: Rule) -> None:
        self.index = index
        self.rule = rule
        self.program = cel.compile(rule.when)
        self.uses = frozenset(self.program.references()["variables"]) & VARIABLES

    def holds(self, context: cel.Context) -> bool | str:
        """True or False, or why it could not be evaluated."""
        try:
            value = self.program.execute(context)
        except Exception as exc:  # the library raises what CEL's errors map to, of any type
            return why(exc)
        return value if isinstance(value, bool) else f"the condition gave {type(value).__name__}, not a boolean"

    def on_tool(self, tool: cel.Context) -> object:
        """True or False when the tool's facts alone (`tool` holds only them) decide the condition, else
        `UNDECIDED`."""
        if "tool" not in self.uses:
            return UNDECIDED
        try:
            value = self.program.execute(tool)
        except Exception:  # it needs more than the tool (or fails for the call to tell)
            return UNDECIDED
        return value if isinstance(value, bool) else UNDECIDED


def why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def keys_read(rules: Sequence[Rule], variable: str) -> frozenset[str] | None:
    """The keys of `variable` (tool, args or claims) the rules read (`tool.method`, `args.bookId`), so that only
    those are converted for CEL; None when some rule reads it otherwise (`args["x"]`, `size(args)`: every key is
    kept).
    Where the name appears in a string literal, it counts as read otherwise: more is kept, never less."""
    keys: set[str] = set()
    for rule in rules:
        named = _KEY[variable].findall(rule.when)
        if len(named) != len(_NAMED[variable].findall(rule.when)):
            return None
        keys.update(named)
    return frozenset(keys)


def chain(decisions: Sequence[CompiledRule], always: bool) -> Chain:
    """The programs that find the first of `decisions` that holds (none to evaluate when there is no rule, or
    only one that always holds: `always` says the last holds whatever the call)."""
    evaluated = decisions[:-1] if always else decisions
    return tuple(
        program
        for start in range(0, len(evaluated), CHAIN_LENGTH)
        for program in _segment(evaluated[start : start + CHAIN_LENGTH], start)
    )


def _segment(rules: Sequence[CompiledRule], start: int) -> Chain:
    expression = "-1"
    for position in range(len(rules) - 1, -1, -1):
        expression = f"({_wrapped(rules[position].rule.when)}) ? {position} : ({expression})"
    try:
        return ((cel.compile(expression), start),)
    except (ValueError, RuntimeError):  # deep rules, too deep together: halve
        if len(rules) == 1:
            raise ValueError(f"policy rule {rules[0].rule.name!r} cannot be combined with others") from None
        half = len(rules) // 2
        return (*_segment(rules[:half], start), *_segment(rules[half:], start + half))


def _wrapped(when: str) -> str:
    """A condition as it goes between parentheses: a line break after it, so that a `//` comment it ends with stops
    there instead of swallowing what follows."""
    return f"{when}\n"


def first_decision(decisions: Sequence[CompiledRule], always: bool, programs: Chain, context: Any) -> Decision:
    """The decision of the first rule that holds in `context` (none: allowed)."""
    if not decisions:
        return ALLOWED
    for program, start in programs:
        try:
            position = program.execute(context)
        except Exception:  # some condition failed: find which, one by one
            return _one_by_one(decisions, always, context)
        if not isinstance(position, int):
            return _one_by_one(decisions, always, context)
        if position >= 0:
            return decided(decisions[start + position])
    return decided(decisions[-1]) if always else ALLOWED


def _one_by_one(decisions: Sequence[CompiledRule], always: bool, context: Any) -> Decision:
    errors: list[tuple[str, str]] = []
    last = len(decisions) - 1
    for position, compiled in enumerate(decisions):
        holds = True if position == last and always else compiled.holds(context)
        if isinstance(holds, str):
            errors.append((compiled.rule.name, holds))
            log.warning("policy rule %s could not be evaluated: %s", compiled.rule.name, holds)
            if compiled.rule.effect == "allow":
                continue  # an allow that cannot be evaluated does not hold; a deny or approve does
            return decided(compiled, tuple(errors))
        if holds:
            return decided(compiled, tuple(errors))
    return Decision("allow", errors=tuple(errors))


def decided(compiled: CompiledRule, errors: tuple[tuple[str, str], ...] = ()) -> Decision:
    rule = compiled.rule
    effect: Literal["allow", "deny", "approve"] = "deny" if rule.effect == "redact" else rule.effect
    return Decision(
        effect, rule.name, rule.message, errors=errors, approval_seconds=rule.approval_seconds, approver=rule.approver
    )


Holds = tuple[tuple[cel.Program, int, int], ...]
"""Programs, each answering a list of whether each of its rules holds, with the position of its first rule and
how many it has."""


def together(rules: Sequence[CompiledRule]) -> Holds:
    """Programs evaluating `rules` all at once, `CHAIN_LENGTH` at a time (a list of their conditions)."""
    out: list[tuple[cel.Program, int, int]] = []
    for start in range(0, len(rules), CHAIN_LENGTH):
        part = rules[start : start + CHAIN_LENGTH]
        try:
            conditions = ", ".join(f"({_wrapped(r.rule.when)})" for r in part)
            out.append((cel.compile(f"[{conditions}]"), start, len(part)))
        except (ValueError, RuntimeError):  # too deep together: each on its own
            out.extend((r.program, start + i, 0) for i, r in enumerate(part))
    return tuple(out)


def each_holds(rules: Sequence[CompiledRule], programs: Holds, context: Any) -> list[bool | str]:
    """Whether each of `rules` holds (or why it could not be evaluated), evaluated by `programs`."""
    results: list[bool | str] = []
    for program, start, count in programs:
        if count == 0:  # a rule on its own
            results.append(rules[start].holds(context))
            continue
        try:
            values = program.execute(context)
        except Exception:  # one of them failed: each on its own
            values = None
        if isinstance(values, list) and len(values) == count and all(isinstance(v, bool) for v in values):
            results.extend(values)
        else:
            results.extend(rule.holds(context) for rule in rules[start : start + count])
    return results
