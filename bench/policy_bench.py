"""What a policy decision costs per call, in process, as `CallPath` makes it (`apimcp.policies`): 50 rules in
four shapes, the listing filter over 1,000 tools (a caller's first listing, then kept), and building the rules for
1,000 tools (when a snapshot is applied).

    python -m bench.policy_bench [--rounds 7] [--calls 20000]

Figures are medians over `--rounds` rounds of `--calls` decisions each (microseconds per decision); the shapes
run interleaved in each round, so a machine that slows down slows them all.

- `50 rules, none holds`: every rule reads the caller, its claims, the arguments and the tool, and none can be
  left out for the tool: the worst case, every condition evaluated on every call.
- `50 rules on tools`: each rule names the tool it is about (`tool.name == "t7" && ...`), as most do: only the
  rules of the tool called are left to evaluate.
- `50 rules, the first holds`: a call decided by the first rule.
- `50 rules, 5 redact`: 45 decision rules that do not hold and 5 redact rules that do.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from itertools import count
from typing import Any

from apimcp.catalog.model import Operation, RestBinding, ToolHints
from apimcp.catalog.tools import tool_of
from apimcp.policies.decisions import CallFacts
from apimcp.policies.facts import tool_facts
from apimcp.policies.policy_set import PolicySet
from apimcp.policies.rules import parse_rules
from apimcp.protocol.caller import Caller

CLAIMS = {
    "iss": "https://idp.example", "sub": "ada", "aud": "https://gw.example/mcp/books", "exp": 1_900_000_000,
    "iat": 1_800_000_000, "scope": "books:read books:write", "groups": ["staff", "eu"], "region": "eu",
    "email": "ada@example.com", "client_id": "agent",
}  # fmt: skip
CALLER = Caller("https://idp.example sub=ada", frozenset({"books:read", "books:write"}), "ada", "https://idp.example",
                claims=CLAIMS)  # fmt: skip
_NUMBERS = count()
"""Each listing's new caller."""
ARGUMENTS = {"bookId": 3, "title": "Emma", "tags": ["novel", "classic"], "copies": 2}


def _tools(count: int) -> dict[str, dict[str, Any]]:
    tools = {}
    for index in range(count):
        method = ("GET", "POST", "PUT", "DELETE")[index % 4]
        operation = Operation(
            tool_name=f"t{index}", input_schema={"type": "object"},
            binding=RestBinding(method=method, path=f"/things{index}/{{id}}"),
            hints=ToolHints(read_only=method == "GET", destructive=method == "DELETE"), tags=("things",),
        )  # fmt: skip
        tools[operation.tool_name] = tool_facts(tool_of(operation), operation, "things")
    return tools


def _shapes(tools: dict[str, dict[str, Any]]) -> dict[str, PolicySet]:
    never = [
        {"name": f"n{i}", "effect": "deny",
         "when": f'"group{i}" in claims.groups && caller.subject != "x{i}" && args.copies > {i + 100} '
                 f'&& !tool.read_only'}
        for i in range(50)
    ]  # fmt: skip
    on_tools = [
        {"name": f"t{i}", "effect": "deny",
         "when": f'tool.name == "t{i}" && "group{i}" in claims.groups && args.copies > {i}'}
        for i in range(50)
    ]  # fmt: skip
    first = [{"name": "first", "effect": "allow", "when": '"staff" in claims.groups'}, *never[1:]]
    redact = [
        *never[:45],
        *({"name": f"r{i}", "effect": "redact", "when": 'claims.region == "eu"', "fields": [f"f{i}"]}
          for i in range(5)),
    ]  # fmt: skip
    return {
        "50 rules, none holds": PolicySet(parse_rules(never), tools),
        "50 rules on tools": PolicySet(parse_rules(on_tools), tools),
        "50 rules, the first holds": PolicySet(parse_rules(first), tools),
        "50 rules, 5 redact": PolicySet(parse_rules(redact), tools),
    }


def _per_call(action: Callable[[], object], calls: int) -> float:
    begun = time.perf_counter()
    for _ in range(calls):
        action()
    return (time.perf_counter() - begun) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    tools = _tools(1000)
    begun = time.perf_counter()
    shapes = _shapes(tools)
    built = (time.perf_counter() - begun) / len(shapes)
    call = CallFacts(CALLER, "203.0.113.7", "2025-11-25", ARGUMENTS)
    first_listing, again = "listing 1,000 tools, a caller's first (ms)", "listing 1,000 tools again (ms)"
    each_tool = "listing 1,000 tools, rules on tools, a caller's first (ms)"
    samples: dict[str, list[float]] = {name: [] for name in [*shapes, first_listing, each_tool, again]}
    for _ in range(args.rounds):
        for name, policies in shapes.items():
            samples[name].append(_per_call(lambda p=policies: p.decide("t3", call), args.calls))  # type: ignore[misc]
        listing = shapes["50 rules, none holds"]

        def listed(fresh: bool, policies: PolicySet = listing) -> int:
            fresh_caller = Caller(f"p{next(_NUMBERS)}", CALLER.scopes, "ada", CALLER.issuer, claims=CLAIMS)
            caller = fresh_caller if fresh else CALLER
            visible = policies.visible(caller, "203.0.113.7", "2025-11-25")
            return sum(visible(name) for name in tools)

        samples[first_listing].append(_per_call(lambda: listed(True), 5) / 1000)
        on_tools = shapes["50 rules on tools"]
        samples[each_tool].append(_per_call(lambda p=on_tools: listed(True, p), 5) / 1000)  # type: ignore[misc]
        listed(False)  # kept from now on
        samples[again].append(_per_call(lambda: listed(False), 5) / 1000)
    print(f"rules built for 1,000 tools in {built * 1000:.0f} ms per shape (when a snapshot is applied)")
    print("| shape | per call (median of rounds) |")
    print("|---|---|")
    for name, values in samples.items():
        unit = "" if name.endswith("(ms)") else " µs"
        print(f"| {name} | {statistics.median(values):.1f}{unit} |")


if __name__ == "__main__":
    main()
