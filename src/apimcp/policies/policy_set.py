"""An exposition's rules, compiled for its tools: what each call may do, and which tools a caller sees.

Meaning. Rules are read in order (the organization's, then the plan's). The first `allow`, `deny` or `approve`
rule whose condition holds decides the call (`approve`: once a person approves it, `approval.py`); when none
holds, the call is allowed. Every `redact` rule whose condition holds
adds its fields to what is hidden in the answer, whoever decided. A condition that cannot be evaluated (a key the
arguments lack, a type that does not fit) counts as holding for `deny`, `approve` and `redact` and as not holding
for `allow`: a mistake in a rule never opens a door. A listing shows the tools some call could be allowed to make: a
rule that reads `args` cannot be decided without them, so a tool is hidden only by a rule that holds whatever
the arguments.

Cost. When the exposition is built, each rule is evaluated against each tool's facts alone: a rule that cannot
hold for a tool (`tool.name == "delete_book" && ...` for any other tool) is dropped from that tool's list, and
one that holds whatever the caller (a rule on `tool.method` only) ends it. The rules left for a tool are compiled
into programs that find the first that holds (`programs.py`); tools with the same rules share them. A call then
converts only the arguments and tool facts its rules read, into a context that already holds its caller's
(`caller_contexts.py`); a caller's listing is kept until the rules change, unless a rule reads the time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import cel
import orjson

from apimcp.policies.caller_contexts import MAX_CALLERS, CallerContexts, Key, key_of
from apimcp.policies.decisions import ALLOWED, CallFacts, Decision
from apimcp.policies.facts import Facts, caller_facts, now
from apimcp.policies.programs import (
    Chain,
    CompiledRule,
    Holds,
    chain,
    each_holds,
    first_decision,
    keys_read,
    together,
    why,
)
from apimcp.policies.rules import Rule
from apimcp.protocol.caller import Caller


class _ToolRules:
    """The rules left for one tool, in order, and the programs that find the first decision among them."""

    __slots__ = ("always", "arguments", "chain", "decisions", "redacting", "redactions", "same", "tool", "uses")

    def __init__(
        self, decisions: tuple[CompiledRule, ...], always: bool,
        redactions: tuple[tuple[CompiledRule, bool], ...], programs: Chain, tool: Facts,
        arguments: frozenset[str] | None,
    ) -> None:  # fmt: skip
        self.decisions = decisions
        self.always = always
        """The last of `decisions` holds for this tool whatever the call (it is not evaluated)."""
        self.redactions = redactions
        """Each `redact` rule left, with True when it holds whatever the call."""
        self.redacting: Holds = together([c for c, always in redactions if not always])
        self.chain = programs
        uses: set[str] = set()
        for compiled in (*decisions, *(c for c, _ in redactions)):
            uses |= compiled.uses
        self.uses = frozenset(uses)
        self.tool = tool
        """The facts its rules read."""
        self.arguments = arguments
        """The arguments its rules read (None: every one)."""
        self.same = (tuple(c.index for c in decisions), always, orjson.dumps(tool, option=orjson.OPT_SORT_KEYS))
        """Tools with the same rules and the same facts read are listed alike."""

    def call_values(self, call: CallFacts) -> dict[str, Any]:
        """What a call adds to its caller's context for these rules."""
        values: dict[str, Any] = {}
        if "tool" in self.uses:
            values["tool"] = self.tool
        if "args" in self.uses:
            read, arguments = self.arguments, call.arguments
            values["args"] = arguments if read is None else {k: v for k, v in arguments.items() if k in read}
        if "now" in self.uses:
            values["now"] = call.time or now()
        return values


class PolicySet:
    """Rules compiled for the tools of one exposition."""

    def __init__(self, rules: Sequence[Rule], tools: Mapping[str, Facts]) -> None:
        """`tools`: every tool a call may name (listed or reached by scripts), with its facts (`facts.py`)."""
        self.rules = tuple(rules)
        compiled = [CompiledRule(index, rule) for index, rule in enumerate(rules)]
        read, arguments = keys_read(rules, "tool"), keys_read(rules, "args")
        self._tools: dict[str, _ToolRules] = {}
        chains: dict[tuple[int, ...], Chain] = {}
        for name, facts in tools.items():
            kept = facts if read is None else {key: value for key, value in facts.items() if key in read}
            self._tools[name] = _tool_rules(compiled, kept, arguments, chains)
        self.hides = any(rule.effect == "deny" for rule in rules)
        """Some rule may hide tools from a listing (no `deny` rule: every tool is listed)."""
        self._callers = CallerContexts(keys_read(rules, "claims"))
        self._timeless = not any("now" in c.uses for c in compiled)
        self._listings: OrderedDict[Key, frozenset[str]] = OrderedDict()

    def decide(self, tool: str, call: CallFacts) -> Decision:
        """What the rules say of calling `tool` so; never raises (a tool it was not built with: denied)."""
        rules = self._tools.get(tool)
        if rules is None:
            return Decision("deny", None, "the exposition's policies do not know the tool")
        if not rules.decisions and not rules.redactions:
            return ALLOWED
        try:
            context = self._callers.of(call)
            context.update(rules.call_values(call))
        except Exception as exc:  # a value CEL cannot hold: nothing can be decided
            return Decision("deny", None, f"the call cannot be checked by the policies ({why(exc)})")
        decision = first_decision(rules.decisions, rules.always, rules.chain, context)
        if not rules.redactions:
            return decision
        fields: list[str] = []
        by: list[str] = []
        errors = list(decision.errors)
        evaluated = [c for c, always in rules.redactions if not always]
        held = iter(each_holds(evaluated, rules.redacting, context))
        for compiled, always in rules.redactions:
            holds = True if always else next(held)
            if isinstance(holds, str):
                errors.append((compiled.rule.name, holds))
            if holds is not False:
                fields.extend(compiled.rule.fields)
                by.append(compiled.rule.name)
        return replace(decision, redact=tuple(dict.fromkeys(fields)), redacted_by=tuple(by), errors=tuple(errors))

    def visible(self, caller: Caller | None, client: str | None, revision: str) -> Callable[[str], bool]:
        """For one listing: whether the caller might be allowed some call of a tool (see the module's meaning)."""
        if not self.hides:
            return _everything
        key = key_of(caller, client, revision)
        listed = self._listings.get(key) if self._timeless else None
        if listed is None:
            listed = self._listed(CallFacts(caller, client, revision, {}))
            if self._timeless:
                self._listings[key] = listed
                if len(self._listings) > MAX_CALLERS:
                    self._listings.popitem(last=False)
        else:
            self._listings.move_to_end(key)
        return listed.__contains__

    def _listed(self, call: CallFacts) -> frozenset[str]:
        try:  # a context of its own: it never holds arguments
            context = cel.Context({"caller": caller_facts(call.caller, call.client, call.revision),
                                   "claims": self._callers.claims(call.caller), "now": now()})  # fmt: skip
        except Exception:  # a caller CEL cannot hold: its calls are all denied
            return frozenset()
        memo: dict[int, bool | str] = {}  # rules that do not read the tool hold or not once per listing
        alike: dict[tuple[tuple[int, ...], bool, bytes], bool] = {}
        listed = []
        for name, rules in self._tools.items():
            may = alike.get(rules.same)
            if may is None:
                may = alike[rules.same] = _may_call(rules, context, memo)
            if may:
                listed.append(name)
        return frozenset(listed)

    def may_redact(self, tool: str) -> tuple[str, ...]:
        """The keys some call of `tool` may have hidden (its output schema allows their replacement)."""
        rules = self._tools.get(tool)
        if rules is None:
            return ()
        return tuple(dict.fromkeys(field for compiled, _ in rules.redactions for field in compiled.rule.fields))


def _everything(tool: str) -> bool:
    return True


def _may_call(rules: _ToolRules, context: cel.Context, memo: dict[int, bool | str]) -> bool:
    last = len(rules.decisions) - 1
    tool_set = False
    for position, compiled in enumerate(rules.decisions):
        if position == last and rules.always:
            holds: bool | str = True
        elif "tool" in compiled.uses:
            if not tool_set:
                context.update({"tool": rules.tool})
                tool_set = True
            holds = compiled.holds(context)
        elif compiled.index in memo:
            holds = memo[compiled.index]
        else:
            holds = memo[compiled.index] = compiled.holds(context)
        opens = compiled.rule.effect != "deny"  # allow, or approve: the call may be made
        if isinstance(holds, str) and "args" in compiled.uses:  # the listing has no arguments
            if opens:
                return True  # some arguments may make it hold
            continue  # a deny that some arguments make hold: others may not
        if compiled.rule.effect == "allow":
            if holds is True:
                return True
        elif holds is not False:  # holds, or cannot be evaluated (which counts as holding)
            return opens
    return True


def _tool_rules(
    compiled: Sequence[CompiledRule], facts: Facts, arguments: frozenset[str] | None,
    chains: dict[tuple[int, ...], Chain],
) -> _ToolRules:  # fmt: skip
    decisions: list[CompiledRule] = []
    redactions: list[tuple[CompiledRule, bool]] = []
    always = False
    alone = cel.Context({"tool": facts})  # converted once for every rule
    for rule in compiled:
        holds = rule.on_tool(alone)
        if holds is False:
            continue
        if rule.rule.effect == "redact":
            redactions.append((rule, holds is True))
            continue
        if always:
            continue  # after a rule that always decides this tool: never reached
        decisions.append(rule)
        always = holds is True
    key = tuple(rule.index for rule in decisions) + ((-1,) if always else ())
    if key not in chains:
        chains[key] = chain(decisions, always)
    return _ToolRules(tuple(decisions), always, tuple(redactions), chains[key], facts, arguments)
