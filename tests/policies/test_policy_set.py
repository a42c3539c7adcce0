"""Policies decide calls and listings as docs/governance.md says: the first allow or deny rule that holds
decides, redact rules add up, a condition that cannot be evaluated never opens a door, and a listing hides only
the tools no call could be allowed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apimcp.catalog.model import GraphQLBinding, Operation, RestBinding, ToolHints
from apimcp.catalog.tools import tool_of
from apimcp.policies.decisions import CallFacts
from apimcp.policies.facts import tool_facts
from apimcp.policies.policy_set import PolicySet
from apimcp.policies.rules import PolicyError, Rule, parse_rules
from apimcp.protocol.caller import Caller


def _operation(name: str, method: str, path: str, read_only: bool) -> Operation:
    return Operation(
        tool_name=name, input_schema={"type": "object"}, binding=RestBinding(method=method, path=path),
        hints=ToolHints(read_only=read_only, destructive=method == "DELETE"), tags=("books",),
    )  # fmt: skip


OPERATIONS = [
    _operation("list_books", "GET", "/books", True),
    _operation("get_book", "GET", "/books/{bookId}", True),
    _operation("delete_book", "DELETE", "/books/{bookId}", False),
    _operation("transfer", "POST", "/transfers", False),
    Operation(
        tool_name="add_book",
        input_schema={"type": "object"},
        binding=GraphQLBinding(operation_type="mutation", root_field="addBook", document="", operation_name="AddBook"),
    ),
]
TOOLS = {op.tool_name: tool_facts(tool_of(op), op, "library") for op in OPERATIONS}


def _caller(groups: list[str] | None = None, subject: str = "alice", **claims: Any) -> Caller:
    claims = {"sub": subject, **({"groups": groups} if groups is not None else {}), **claims}
    return Caller(f"https://idp {subject}", frozenset({"books"}), subject, "https://idp", claims=claims)


def _call(caller: Caller | None, **arguments: Any) -> CallFacts:
    return CallFacts(caller, "127.0.0.1", "2025-11-25", arguments)


def _set(*rules: dict[str, Any]) -> PolicySet:
    return PolicySet(parse_rules(list(rules)), TOOLS)


CONTRACTORS = {"name": "contractors-read-only", "when": '"contractors" in claims.groups && !tool.read_only',
               "effect": "deny", "message": "Contractors may only read."}  # fmt: skip


def test_the_first_allow_or_deny_rule_that_holds_decides_and_none_allows() -> None:
    policies = _set(
        {"name": "admins", "when": '"admins" in claims.groups', "effect": "allow"},
        CONTRACTORS,
        {"name": "big-transfers", "when": 'tool.name == "transfer" && args.amount > 1000', "effect": "deny"},
    )
    contractor, admin, staff = _caller(["contractors"]), _caller(["admins", "contractors"]), _caller(["staff"])
    denied = policies.decide("delete_book", _call(contractor, bookId=3))
    assert (denied.effect, denied.rule) == ("deny", "contractors-read-only")
    assert denied.refusal("delete_book") == (
        "Calling delete_book is denied by the policy rule 'contractors-read-only': Contractors may only read."
    )
    assert policies.decide("get_book", _call(contractor, bookId=3)).allowed
    assert policies.decide("delete_book", _call(admin, bookId=3)).rule == "admins"  # earlier rule wins
    assert policies.decide("delete_book", _call(staff, bookId=3)).rule is None
    assert policies.decide("transfer", _call(staff, amount=5000)).rule == "big-transfers"  # argument values decide
    assert policies.decide("transfer", _call(staff, amount=10)).allowed


@pytest.mark.parametrize(
    "when",
    [
        'args.exists(k, k == "amount")',
        "args.size() > 1",
        'args.all(k, k != "x") && args.amount > 10',
        'claims.exists(k, k == "admin_role")',
        'claims.filter(k, k.startsWith("admin")).size() > 0',
    ],
)
def test_a_macro_or_method_on_the_whole_map_sees_every_key(when: str) -> None:
    """Only the keys a rule names are given to CEL; a rule that reads the map whole (a macro, `size()`) gets all of
    it, or its condition is decided on an empty map and a deny never holds."""
    policies = _set({"name": "whole-map", "when": when, "effect": "deny"})
    caller = _caller(admin_role=True)
    decided = policies.decide("transfer", _call(caller, amount=5000, note="n"))
    assert (decided.effect, decided.rule) == ("deny", "whole-map")
    # listed when another call may be allowed (the arguments decide), hidden when the caller alone is refused
    assert policies.visible(caller, "127.0.0.1", "2025-11-25")("transfer") is when.startswith("args")


@pytest.mark.parametrize("when", ['tool.name == "transfer" // the big one', "args.amount > 10 // in euros"])
def test_a_rule_ending_in_a_comment_is_combined_with_others(when: str) -> None:
    policies = _set({"name": "commented", "when": when, "effect": "deny"}, {"name": "later", "when": "true",
                                                                           "effect": "allow"})  # fmt: skip
    assert policies.decide("transfer", _call(_caller(), amount=5000)).rule == "commented"
    assert policies.decide("get_book", _call(_caller(), amount=5)).rule == "later"


def test_tool_facts_say_kind_method_path_operation_and_annotations() -> None:
    policies = _set(
        {"name": "no-mutations", "when": 'tool.kind == "graphql" && tool.operation.startsWith("mutation ")',
         "effect": "deny"},
        {"name": "no-deletes", "when": 'tool.method == "DELETE" && tool.path.startsWith("/books") && tool.destructive'
         ' && tool.service == "library" && "books" in tool.tags', "effect": "deny"},
    )  # fmt: skip
    anyone = _call(None)
    assert policies.decide("add_book", anyone).rule == "no-mutations"
    assert policies.decide("delete_book", anyone).rule == "no-deletes"
    assert policies.decide("list_books", anyone).allowed


def test_caller_facts_and_the_time() -> None:
    policies = _set(
        {"name": "anonymous", "when": "!caller.authenticated", "effect": "deny"},
        {"name": "from-lab", "when": 'caller.client == "127.0.0.1" && caller.revision == "2025-11-25" && '
         '"books" in caller.scopes && caller.issuer == "https://idp" && now > timestamp("2020-01-01T00:00:00Z")',
         "effect": "allow"},
        {"name": "else", "when": "true", "effect": "deny"},
    )  # fmt: skip
    assert policies.decide("list_books", _call(None)).rule == "anonymous"
    assert policies.decide("list_books", _call(_caller())).rule == "from-lab"
    elsewhere = CallFacts(_caller(), "10.0.0.1", "2025-11-25", {})
    assert policies.decide("list_books", elsewhere).rule == "else"


def test_redact_rules_add_up_whoever_decides() -> None:
    policies = _set(
        {"name": "partners-no-email", "when": 'claims.sub == "partner"', "effect": "redact", "fields": ["email"]},
        {"name": "no-phones", "when": 'tool.name == "get_book"', "effect": "redact", "fields": ["phone", "email"]},
    )
    partner = policies.decide("get_book", _call(_caller(subject="partner")))
    assert partner.allowed and partner.redact == ("email", "phone")
    assert partner.redacted_by == ("partners-no-email", "no-phones")
    assert policies.decide("list_books", _call(_caller())).redact == ()
    assert policies.may_redact("get_book") == ("email", "phone") and policies.may_redact("list_books") == ("email",)


def test_a_condition_that_cannot_be_evaluated_never_opens_a_door() -> None:
    policies = _set(
        {"name": "trusted", "when": "claims.level > 3", "effect": "allow"},  # no level: not allowed by this
        {"name": "small-only", "when": "args.amount > 100", "effect": "deny"},  # no amount: denied
        {"name": "mask", "when": "claims.partner == true", "effect": "redact", "fields": ["email"]},
    )
    decision = policies.decide("transfer", _call(_caller()))
    assert (decision.effect, decision.rule) == ("deny", "small-only")
    assert [rule for rule, _ in decision.errors] == ["trusted", "small-only", "mask"]
    assert decision.redact == ("email",)  # a redaction that cannot be checked hides
    assert policies.decide("transfer", _call(_caller(level=5), amount=10)).rule == "trusted"
    fine = policies.decide("transfer", _call(_caller(partner=False), amount=10))
    assert fine.allowed and fine.rule is None and fine.redact == ()


def test_a_value_a_condition_does_not_expect_is_an_error_not_a_crash() -> None:
    policies = _set({"name": "odd", "when": '"x"', "effect": "deny"})
    decision = policies.decide("list_books", _call(None))
    assert decision.effect == "deny" and decision.errors == (("odd", "the condition gave str, not a boolean"),)


def test_a_listing_hides_only_the_tools_no_call_could_be_allowed() -> None:
    policies = _set(
        CONTRACTORS,
        {"name": "eu-reads", "when": '"contractors" in claims.groups && args.region == "eu"', "effect": "allow"},
        {"name": "no-transfers", "when": 'tool.name == "transfer"', "effect": "deny"},
    )
    contractor = policies.visible(_caller(["contractors"]), None, "2025-11-25")
    assert [name for name in TOOLS if contractor(name)] == ["list_books", "get_book"]
    staff = policies.visible(_caller(["staff"]), None, "2025-11-25")
    assert [name for name in TOOLS if staff(name)] == ["list_books", "get_book", "delete_book", "add_book"]
    reads_args = _set({"name": "eu-only", "when": 'args.region != "eu"', "effect": "deny"})
    assert all(reads_args.visible(None, None, "2025-11-25")(name) for name in TOOLS)  # some call is allowed
    allow_first = _set({"name": "eu", "when": 'args.region == "eu"', "effect": "allow"},
                       {"name": "else", "when": "true", "effect": "deny"})  # fmt: skip
    assert all(allow_first.visible(None, None, "2025-11-25")(name) for name in TOOLS)
    assert not allow_first.decide("get_book", _call(None, region="us")).allowed


def test_rules_that_cannot_hold_for_a_tool_are_left_out_of_its_program() -> None:
    policies = _set(*({"name": f"r{i}", "when": f'tool.name == "t{i}" && claims.sub == "x"', "effect": "deny"}
                      for i in range(50)))  # fmt: skip
    assert policies._tools["get_book"].decisions == ()
    assert policies._tools["get_book"].chain == ()


def test_an_approve_rule_decides_as_deny_does_and_lists_as_allow_does() -> None:
    policies = _set(
        {"name": "deletes", "when": "tool.destructive", "effect": "approve", "message": "No undo.",
         "approval_seconds": 30},
        {"name": "no-big", "when": "args.amount > 100", "effect": "approve"},
        {"name": "rest", "when": "true", "effect": "deny"},
    )  # fmt: skip
    asked = policies.decide("delete_book", _call(None))
    assert (asked.effect, asked.rule, asked.message, asked.approval_seconds) == ("approve", "deletes", "No undo.", 30)
    assert asked.allowed  # once approved
    masked = _set({"name": "ask", "when": "true", "effect": "approve", "approval_seconds": 9},
                  {"name": "mask", "when": "true", "effect": "redact", "fields": ["email"]})  # fmt: skip
    both = masked.decide("get_book", _call(None))
    assert (both.effect, both.approval_seconds, both.redact) == ("approve", 9, ("email",))
    assert (asked.approver, both.approver) == ("caller", "caller")
    by_admin = _set({"name": "ask-admin", "when": "true", "effect": "approve", "approver": "admin"})
    assert by_admin.decide("delete_book", _call(None)).approver == "admin"
    broken = policies.decide("transfer", _call(None))  # no amount: the approve rule cannot be evaluated
    assert (broken.effect, broken.rule) == ("approve", "no-big")
    listed = policies.visible(None, None, "2025-11-25")
    assert [name for name in TOOLS if listed(name)] == ["list_books", "get_book", "delete_book", "transfer", "add_book"]


def test_fifty_rules_that_all_apply_decide_in_order_across_programs() -> None:
    """Long lists are cut into programs a CEL parser takes (it bounds nesting); the first rule that holds still
    decides, whichever program holds it, and an error in a later program is still found."""
    rules = [{"name": f"r{i}", "when": f"args.n == {i} && caller.subject != 'x'", "effect": "deny"}
             for i in range(50)]  # fmt: skip
    policies = _set(*rules, {"name": "odd", "when": "args.m > 1", "effect": "deny"})
    for n in (0, 11, 12, 37, 49):
        assert policies.decide("get_book", _call(_caller(), n=n, m=0)).rule == f"r{n}"
    assert policies.decide("get_book", _call(_caller(), n=99, m=0)).rule is None
    broken = policies.decide("get_book", _call(_caller(), n=99))  # no m: the last rule fails, closed
    assert (broken.rule, [rule for rule, _ in broken.errors]) == ("odd", ["odd"])
    assert len(policies._tools["get_book"].chain) > 1


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("nope", "policies is a list of rules"),
        ([{"name": "a", "when": "foo(", "effect": "deny"}], "policies[0] (a): its condition is not valid CEL"),
        (
            [{"name": "a", "when": "user.sub == 'x'", "effect": "deny"}],
            "policies[0] (a): its condition names user, which is not one of args, caller, claims, now, tool",
        ),
        (
            [{"name": "a", "when": "true", "effect": "deny"}, {"name": "a", "when": "true", "effect": "allow"}],
            "policies[1] (a): another rule is named 'a'",
        ),
        ([{"name": "a", "when": "true", "effect": "ask"}], "effect is one of allow, deny, approve, redact, not 'ask'"),
        ([{"name": "a", "when": "true", "effect": "deny", "approval_seconds": 5}], "this rule does not approve"),
        ([{"name": "a", "when": "true", "effect": "approve", "approval_seconds": 0}], "a number of seconds above 0"),
        ([{"name": "a", "when": "true", "effect": "deny", "approver": "admin"}], "this rule does not approve"),
        ([{"name": "a", "when": "true", "effect": "approve", "approver": "boss"}], "approver is one of caller, admin"),
        (
            [{"name": "a", "when": "true", "effect": "approve", "approver": "admin", "approval_seconds": 0.5}],
            "approval_seconds is at least 1 for an administrator's approval",
        ),
        ([{"name": "a", "when": "true", "effect": "allow", "message": "x"}], "message is what a deny rule tells"),
        ([{"name": "a", "when": "true", "effect": "redact"}], "a redact rule lists the fields it hides"),
        ([{"name": "a", "when": "true", "effect": "deny", "fields": ["x"]}], "fields are what a redact rule hides"),
        (
            [{"name": "a", "when": "args.l.exists(x, args.l.exists(y, x == y))", "effect": "deny"}],
            "its condition loops more than 1 time",
        ),
        ([{"name": "a", "when": "true", "effect": "deny", "why": "x"}], "unknown key why"),
        ([{"name": "", "when": "true", "effect": "deny"}], "name is 1 to 64 letters"),
    ],
)
def test_a_rule_that_cannot_be_used_is_refused_where_it_is_written(rules: object, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_rules(rules)
    assert message in str(caught.value)


def test_rules_read_back_as_they_were_written() -> None:
    written = [CONTRACTORS, {"name": "r", "when": "true", "effect": "redact", "fields": ["email"]},
               {"name": "a", "when": "true", "effect": "approve", "approver": "admin"}]  # fmt: skip
    assert [rule.as_json() for rule in parse_rules(written)] == written
    assert parse_rules(None) == ()
    assert isinstance(parse_rules(written)[0], Rule)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
ANY_RULES = [
    CONTRACTORS,
    {"name": "amount", "when": "args.amount > 100 && args.currency == 'EUR'", "effect": "deny"},
    {"name": "region", "when": 'claims.region in ["eu", "ch"] || args.region.startsWith("eu")', "effect": "allow"},
    {"name": "sizes", "when": "size(args.items) > 3 || args.items.exists(i, i.price > 10)", "effect": "deny"},
    {"name": "mask", "when": "claims.level >= 2 && args.x / args.y > 1", "effect": "redact", "fields": ["email"]},
    {"name": "matches", "when": 'string(args.id).matches("^[0-9]+$")', "effect": "allow"},
]
ANY_SET = PolicySet(parse_rules(ANY_RULES), TOOLS)


@settings(max_examples=300, deadline=None)
@given(
    claims=st.dictionaries(st.text(max_size=10), JSON, max_size=6),
    arguments=st.dictionaries(
        st.sampled_from(["amount", "currency", "region", "items", "x", "y", "id", "other"]), JSON, max_size=6
    ),
)
def test_no_evaluation_raises_whatever_the_claims_and_arguments(
    claims: dict[str, Any], arguments: dict[str, Any]
) -> None:
    caller = Caller("p", frozenset(), "s", "i", claims=claims)
    for tool in TOOLS:
        decision = ANY_SET.decide(tool, _call(caller, **arguments))
        assert decision.effect in ("allow", "deny")
        assert ANY_SET.visible(caller, None, "2026-07-28")(tool) in (True, False)
