"""An exposition's rules, compiled for its tools: what each call may do, and which tools a caller sees.

Meaning. Rules are read in order (the organization's, then the plan's). The first `allow` or `deny` rule whose
condition holds decides the call; when none holds, the call is allowed. Every `redact` rule whose condition holds
adds its fields to what is hidden in the answer, whoever decided. A condition that cannot be evaluated (a key the
arguments lack, a type that does not fit) counts as holding for `deny` and `redact` and as not holding for
`allow`: a mistake in a rule never opens a door. A listing shows the tools some call could be allowed to make: a
rule that reads `args` cannot be decided without them, so a tool is hidden only by a rule that holds whatever
the arguments.

Cost. When the exposition is built, each rule is evaluated against each tool's facts alone: a rule that cannot
hold for a tool (`tool.name == "delete_book" && ...` for any other tool) is dropped from that tool's list, and
one that holds whatever the caller (a rule on `tool.method` only) ends it. The rules left for a tool are compiled
into one CEL program that answers the index of the first that holds; tools with the same rules share it. A
call then converts only the variables those rules name, into a context that already holds the tool's facts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import cel

from apimcp.policies.facts import Facts, caller_facts, claims_of, now
from apimcp.policies.rules import VARIABLES, Rule
from apimcp.protocol.caller import Caller

log = logging.getLogger("apimcp.policies")

_UNDECIDED = object()


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules say of one call."""

    effect: Literal["allow", "deny"]
    rule: str | None = None
    """The rule that decided (None: no rule held, and calls are allowed by default)."""
    message: str | None = None
    redact: tuple[str, ...] = ()
    """The keys hidden in the answer, by the `redact` rules in `redacted_by`."""
    redacted_by: tuple[str, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    """(rule, why) for each condition that could not be evaluated (counted as the meaning above says)."""

    @property
    def allowed(self) -> bool:
        return self.effect == "allow"

    def refusal(self, tool: str) -> str:
        """What the caller is told of a denial (the rule's name, its message; never the facts)."""
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

    def variable(self, name: str) -> Any:
        if name == "caller":
            return caller_facts(self.caller, self.client, self.revision)
        if name == "claims":
            return claims_of(self.caller)
        if name == "args":
            return self.arguments
        return self.time or now()


class _Compiled:
    """One rule, compiled on its own (listings, and calls whose combined program failed)."""

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
            return _why(exc)
        return value if isinstance(value, bool) else f"the condition gave {type(value).__name__}, not a boolean"

    def on_tool(self, tool: Facts) -> object:
        """True or False when the tool's facts alone decide the condition, else `_UNDECIDED`."""
        if "tool" not in self.uses:
            return _UNDECIDED
        try:
            value = self.program.execute({"tool": tool})
        except Exception:  # it needs more than the tool (or fails for the call to tell)
            return _UNDECIDED
        return value if isinstance(value, bool) else _UNDECIDED


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


class _ToolRules:
    """The rules left for one tool, in order, and the program that finds the first decision among them."""

    __slots__ = ("always", "chain", "context", "decisions", "redactions", "tool", "uses")

    def __init__(
        self, decisions: tuple[_Compiled, ...], always: bool, redactions: tuple[tuple[_Compiled, bool], ...],
        chain: cel.Program | None, tool: Facts,
    ) -> None:  # fmt: skip
        self.decisions = decisions
        self.always = always
        """The last of `decisions` holds for this tool whatever the call (it is not evaluated)."""
        self.redactions = redactions
        """Each `redact` rule left, with True when it holds whatever the call."""
        self.chain = chain
        uses: set[str] = set()
        for compiled in (*decisions, *(c for c, _ in redactions)):
            uses |= compiled.uses
        uses.discard("tool")
        self.uses = tuple(sorted(uses))
        self.tool = tool
        self.context = cel.Context({"tool": tool})
        """Holds the tool's facts; a call sets the variables it `uses` before evaluating (calls run one at a time
        on the event loop, so one context per tool serves them all)."""


class PolicySet:
    """Rules compiled for the tools of one exposition."""

    def __init__(self, rules: Sequence[Rule], tools: Mapping[str, Facts]) -> None:
        """`tools`: every tool a call may name (listed or reached by scripts), with its facts (`facts.py`)."""
        self.rules = tuple(rules)
        compiled = [_Compiled(index, rule) for index, rule in enumerate(rules)]
        self._tools: dict[str, _ToolRules] = {}
        chains: dict[tuple[int, ...], cel.Program | None] = {}
        for name, facts in tools.items():
            self._tools[name] = _tool_rules(compiled, facts, chains)
        self.hides = any(rule.effect == "deny" for rule in rules)
        """Some rule may hide tools from a listing (no `deny` rule: every tool is listed)."""

    def __bool__(self) -> bool:
        return bool(self.rules)

    def decide(self, tool: str, call: CallFacts) -> Decision:
        """What the rules say of calling `tool` so; never raises (a tool it was not built with: denied)."""
        rules = self._tools.get(tool)
        if rules is None:
            return Decision("deny", None, "the tool is not governed by this exposition's policies")
        context = rules.context
        if rules.uses:
            try:
                context.update({name: call.variable(name) for name in rules.uses})
            except Exception as exc:  # a value CEL cannot hold: nothing can be decided
                return Decision("deny", None, f"the call cannot be checked by the policies ({_why(exc)})")
        decision = _first_decision(rules, context)
        if not rules.redactions:
            return decision
        fields: list[str] = []
        by: list[str] = []
        errors = list(decision.errors)
        for compiled, always in rules.redactions:
            holds = True if always else compiled.holds(context)
            if isinstance(holds, str):
                errors.append((compiled.rule.name, holds))
            if holds is not False:
                fields.extend(compiled.rule.fields)
                by.append(compiled.rule.name)
        return Decision(decision.effect, decision.rule, decision.message, tuple(dict.fromkeys(fields)), tuple(by),
                        tuple(errors))  # fmt: skip

    def visible(self, caller: Caller | None, client: str | None, revision: str) -> Callable[[str], bool]:
        """For one listing: whether the caller might be allowed some call of a tool (see the module's meaning)."""
        if not self.hides:
            return _everything
        call = CallFacts(caller, client, revision, {})
        shared = cel.Context({name: call.variable(name) for name in ("caller", "claims", "now")})
        memo: dict[int, bool | str] = {}  # rules that do not read the tool hold or not once per listing

        def visible(tool: str) -> bool:
            rules = self._tools.get(tool)
            if rules is None:
                return False
            last = len(rules.decisions) - 1
            for position, compiled in enumerate(rules.decisions):
                if position == last and rules.always:
                    holds: bool | str = True
                elif "tool" in compiled.uses:
                    shared.update({"tool": rules.tool})
                    holds = compiled.holds(shared)
                elif compiled.index in memo:
                    holds = memo[compiled.index]
                else:
                    holds = memo[compiled.index] = compiled.holds(shared)
                if isinstance(holds, str) and "args" in compiled.uses:  # the listing has no arguments
                    if compiled.rule.effect == "allow":
                        return True  # some arguments may make it hold
                    continue  # a deny that some arguments make hold: others may not
                if compiled.rule.effect == "allow":
                    if holds is True:
                        return True
                elif holds is not False:
                    return False
            return True

        return visible

    def may_redact(self, tool: str) -> tuple[str, ...]:
        """The keys some call of `tool` may have hidden (its output schema allows their replacement)."""
        rules = self._tools.get(tool)
        if rules is None:
            return ()
        return tuple(dict.fromkeys(field for compiled, _ in rules.redactions for field in compiled.rule.fields))


def _everything(tool: str) -> bool:
    return True


def _tool_rules(
    compiled: Sequence[_Compiled], facts: Facts, chains: dict[tuple[int, ...], cel.Program | None]
) -> _ToolRules:
    decisions: list[_Compiled] = []
    redactions: list[tuple[_Compiled, bool]] = []
    always = False
    for rule in compiled:
        alone = rule.on_tool(facts)
        if alone is False:
            continue
        if rule.rule.effect == "redact":
            redactions.append((rule, alone is True))
            continue
        if always:
            continue  # after a rule that always decides this tool: never reached
        decisions.append(rule)
        always = alone is True
    key = tuple(rule.index for rule in decisions) + ((-1,) if always else ())
    if key not in chains:
        chains[key] = _chain(decisions, always)
    return _ToolRules(tuple(decisions), always, tuple(redactions), chains[key], facts)


def _chain(decisions: Sequence[_Compiled], always: bool) -> cel.Program | None:
    """One program answering the position of the first rule that holds (-1: none); None when there is nothing to
    evaluate (no rule, or only one that always holds)."""
    evaluated = decisions[:-1] if always else decisions
    if not evaluated:
        return None
    expression = str(len(decisions) - 1) if always else "-1"
    for position in range(len(evaluated) - 1, -1, -1):
        expression = f"({evaluated[position].rule.when}) ? {position} : ({expression})"
    return cel.compile(expression)


def _first_decision(rules: _ToolRules, context: cel.Context) -> Decision:
    decisions = rules.decisions
    if not decisions:
        return ALLOWED
    if rules.chain is None:  # only a rule that always holds
        return _decided(decisions[-1])
    try:
        position = rules.chain.execute(context)
    except Exception:  # some condition failed: find which, one by one
        return _one_by_one(rules, context)
    if not isinstance(position, int):
        return _one_by_one(rules, context)
    return _decided(decisions[position]) if position >= 0 else ALLOWED


def _one_by_one(rules: _ToolRules, context: cel.Context) -> Decision:
    errors: list[tuple[str, str]] = []
    last = len(rules.decisions) - 1
    for position, compiled in enumerate(rules.decisions):
        holds = True if position == last and rules.always else compiled.holds(context)
        if isinstance(holds, str):
            errors.append((compiled.rule.name, holds))
            log.warning("policy rule %s could not be evaluated: %s", compiled.rule.name, holds)
            if compiled.rule.effect == "allow":
                continue
            return _decided(compiled, tuple(errors))
        if holds:
            return _decided(compiled, tuple(errors))
    return Decision("allow", errors=tuple(errors))


def _decided(compiled: _Compiled, errors: tuple[tuple[str, str], ...] = ()) -> Decision:
    rule = compiled.rule
    effect: Literal["allow", "deny"] = "allow" if rule.effect == "allow" else "deny"
    return Decision(effect, rule.name, rule.message, errors=errors)
