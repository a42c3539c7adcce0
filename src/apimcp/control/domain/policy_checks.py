"""What a plan's policies would do with a call, without making it (`apimcp policy test`): the decision, the rule
that made it, what would be redacted, and whether the tool is listed for that caller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from apimcp.auth.verifier import TokenRejected, caller_of
from apimcp.catalog.tools import tool_of
from apimcp.control import changes
from apimcp.control.domain import tokens
from apimcp.control.domain.common import get_owned
from apimcp.control.domain.discovery import served_operations
from apimcp.control.domain.tokens import Caller as ApiCaller
from apimcp.control.errors import Invalid, NotFound
from apimcp.control.models import Organization, Plan
from apimcp.policies.decisions import CallFacts
from apimcp.policies.facts import tool_facts
from apimcp.policies.policy_set import PolicySet
from apimcp.policies.rules import PolicyError, parse_rules
from apimcp.protocol.caller import Caller


def check_call(
    session: Session, organization_id: str, plan_id: str, tool: str, arguments: Mapping[str, Any],
    claims: Mapping[str, Any] | None, client: str | None = None, revision: str = "2025-11-25",
) -> dict[str, Any]:  # fmt: skip
    """The plan's answer to `tool` called with `arguments` by the bearer of a token carrying `claims` (None: an
    anonymous caller), from the address `client`."""
    plan = get_owned(session, Plan, organization_id, plan_id, "plan")
    organization = session.get(Organization, organization_id)
    assert organization is not None  # foreign keys
    service, operations = served_operations(session, plan)
    facts = {o.tool_name: tool_facts(tool_of(o), o, service.name) for o in operations}
    if tool not in facts:
        raise NotFound(f"plan {plan.name!r} serves no operation named {tool!r} (custom tools are not checked here)")
    rules = (*parse_rules(organization.policies, "organization policies"), *parse_rules(plan.policies))
    policies = PolicySet(rules, {tool: facts[tool]})
    caller = _caller(claims) if claims is not None else None
    decision = policies.decide(tool, CallFacts(caller, client, revision, arguments))
    return {
        "tool": tool,
        "decision": decision.effect,
        "rule": decision.rule,
        "message": decision.refusal(tool) if not decision.allowed else None,
        "redact": list(decision.redact),
        "redacted_by": list(decision.redacted_by),
        "errors": [{"rule": rule, "error": why} for rule, why in decision.errors],
        "listed": policies.visible(caller, client, revision)(tool),
        "rules": len(rules),
    }


def _caller(claims: Mapping[str, Any]) -> Caller:
    """The caller a verified token with these claims would be (`auth.verifier` makes it so)."""
    issuer = claims.get("iss")
    if not isinstance(issuer, str) or not issuer:
        raise Invalid("claims name their issuer (iss), as a token's do", field="claims")
    try:
        return caller_of(issuer, claims)
    except TokenRejected as exc:
        raise Invalid(f"claims: {exc}", field="claims") from None


def set_organization_policies(session: Session, caller: ApiCaller, raw: object) -> Organization:
    """Replace the rules every plan of the caller's organization applies first (an admin token only: they can
    open what plans close)."""
    tokens.require_admin(caller, "setting the organization's policies")
    try:
        rules = parse_rules(raw, "policies")
    except PolicyError as exc:
        raise Invalid(str(exc), field="policies") from None
    organization = session.get(Organization, caller.organization_id)
    assert organization is not None
    organization.policies = [rule.as_json() for rule in rules] or None
    changes.record(session, organization.id, "organization", organization.id)
    return organization
