"""Audit events: what happened, never what was said.

An event names the request (method, target, outcome, duration, error code, request or session id; for a request
the HTTP response refused, its status and reason instead of an error code; for one refused before it was read, by
its guard or its rate limits, the path, status and reason), where
(organization, exposition, service) and who (the authenticated user, the client's address); a tool call a
script made says which custom tool's script (`via`). Arguments,
results, tokens and credentials are never part of it. Beyond the first few refusals of a kind, one event stands
for many (`count`, `first_time`, `last_time`: `audit.refusals`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from apimcp.guardrails.chain import Heard
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord, shown_target

MAX_TEXT = 512


def _short(value: object) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


@dataclass(frozen=True, slots=True)
class Where:
    organization: str
    exposition_id: str
    exposition: str
    service: str
    version: str


def request_event(where: Where, record: RequestRecord, via: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`via`: for a call a script made inside a request, the custom tool whose script it was (`tool`,
    `exposition_id`, `exposition`); the user, client and ids are then those of the request it served."""
    caller = record.source.caller
    event: dict[str, Any] = {
        "time": time.time(),
        "action": record.method,
        "target": _short(shown_target(record.method, record.target)) if record.target is not None else None,
        "outcome": record.outcome,
        "duration_ms": round(record.duration_ms, 3),
        "organization": where.organization,
        "exposition_id": where.exposition_id,
        "exposition": where.exposition,
        "service": where.service,
        "version": where.version,
        "revision": record.revision,
        "user": _short(caller.principal) if caller is not None else None,
        "session_id": record.session_id,
        "request_id": _short(record.request_id) if record.request_id is not None else None,
        "error_code": record.error_code,
        "client": record.source.client,
    }
    if record.status is not None:  # refused: its status is what the client got (429 too for a script's call)
        event["status"] = record.status
        event["reason"] = record.reason
        if record.retry_after is not None:
            event["retry_after"] = record.retry_after
    if via is not None:
        event["via"] = {key: _short(value) for key, value in via.items()}
    return event


def _call_event(
    where: Where,
    action: str,
    tool: str,
    outcome: str,
    source: RequestSource,
    via: Mapping[str, str] | None,
    **said: Any,
) -> dict[str, Any]:
    """What governance did to a call of `tool` (`said`: what its kind of event adds), with where and who."""
    caller = source.caller
    event: dict[str, Any] = {
        "time": time.time(),
        "action": action,
        "target": _short(tool),
        "outcome": outcome,
        **said,
        "organization": where.organization,
        "exposition_id": where.exposition_id,
        "exposition": where.exposition,
        "service": where.service,
        "version": where.version,
        "user": _short(caller.principal) if caller is not None else None,
        "client": source.client,
    }
    if via is not None:
        event["via"] = {key: _short(value) for key, value in via.items()}
    return event


def policy_event(
    where: Where, tool: str, rule: str | None, source: RequestSource, via: Mapping[str, str] | None
) -> dict[str, Any]:
    """A call of `tool` a policy denied (`rule`: the rule's name; None when the rules could not be checked), 403:
    summarized as other refusals are, since a caller may make as many as it likes."""
    reason = f"policy:{rule}" if rule is not None else "policy"
    return _call_event(where, "policy", tool, "denied", source, via, reason=reason, rule=_short(rule), status=403)


def approval_event(
    where: Where, tool: str, rule: str | None, outcome: str, source: RequestSource, via: Mapping[str, str] | None
) -> dict[str, Any]:
    """A call `rule` made wait for a person's approval, and how that ended (approved, refused, expired, or
    unavailable: the client could not ask)."""
    return _call_event(where, "approval", tool, outcome, source, via, rule=_short(rule))


def guardrail_event(
    where: Where, tool: str, heard: Heard, source: RequestSource, via: Mapping[str, str] | None
) -> dict[str, Any]:
    """What a guardrail found in a call's arguments or answer, by kind and count (never a value), and what it did:
    reported, redacted or blocked."""
    findings = {_short(f.kind): f.count for f in heard.findings[:20]}
    target = shown_target("resources/read", tool) if heard.where == "resource" else tool  # a resource read's URI
    return _call_event(where, "guardrail", target, heard.outcome, source, via, guardrail=_short(heard.guardrail),
                       findings=findings, **{"in": heard.where})  # fmt: skip


def authentication_event(where: Where, reason: str, status: int, client: str | None, path: str) -> dict[str, Any]:
    """A request its exposition's guard turned away (401 or 403, `reason` as the guard names it)."""
    return _at_the_door(where, "authentication", "failure", reason, status, client, path)


def rate_limit_event(
    where: Where, reason: str, retry_after: int, client: str | None, path: str, user: str | None, messages: int = 1
) -> dict[str, Any]:
    """A request refused 429 by the exposition's rate limits before it was read (`reason`: whose limit), with the
    `Retry-After` it was given and the user it was admitted as; `messages`: how many it refused, 1, or those of
    a JSON-RPC batch beyond what the limits allowed (each answered with the 429's error, none run)."""
    event = _at_the_door(where, "rate_limit", "refused", reason, 429, client, path)
    event["user"] = _short(user)
    event["retry_after"] = retry_after
    event["messages"] = messages
    return event


def _at_the_door(
    where: Where, action: str, outcome: str, reason: str, status: int, client: str | None, path: str
) -> dict[str, Any]:
    """A request refused by its HTTP status before the MCP endpoint read it: no method, target or id is known."""
    return {
        "time": time.time(),
        "action": action,
        "target": _short(path),
        "outcome": outcome,
        "reason": reason,
        "status": status,
        "organization": where.organization,
        "exposition_id": where.exposition_id,
        "exposition": where.exposition,
        "service": where.service,
        "version": where.version,
        "client": client,
    }


MAX_COUNT = 2**53
"""The most refusals one summary may stand for (what a JSON number holds exactly)."""


ROUTINE: Final = frozenset({
    "initialize", "ping", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
    "logging/setLevel", "server/discover",
})  # fmt: skip
"""Requests that only say what a server offers: as cheap to make as a refusal, and of little to audit."""
DECISIONS: Final = frozenset({"approval", "guardrail"})
"""What governance did to a call. A policy's denial is one too when a signed-in caller's call was denied; an
anonymous caller's is a refusal (403) like any other, since anyone can make as many as they like."""


def retention_of(event: Mapping[str, Any]) -> str:
    """Which of an organization's trails keeps an event, each with its retention of its own (`control.domain.audit`):
    `refused` (anyone can make as many as they like), `routine` (listing, pinging), `decided` (an approval, a
    guardrail's finding, a signed-in caller's call a policy denied) or `answered` (every other request: calls,
    reads). Events of one kind, however many, never push out those of another."""
    action = event.get("action")
    if action in DECISIONS or (action == "policy" and event.get("user")):
        return "decided"
    if is_refusal(event):
        return "refused"
    if action in ROUTINE:
        return "routine"
    return "answered"


def is_refusal(event: Mapping[str, Any]) -> bool:
    """Whether an event tells of refused requests (its HTTP status says so: 401, 403, 429). Anyone may cause
    those, as many as they like: gateways summarize them (`audit.refusals`), the control plane keeps them apart
    from the events of answered requests."""
    status = event.get("status")
    return isinstance(status, int) and not isinstance(status, bool) and status >= 400


def _is_time(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value < 32_503_680_000  # before the year 3000: a time a datetime holds
    )


def is_event(raw: object) -> bool:
    """Whether a reported event has the shape the control plane keeps (it comes from a gateway: checked). A
    summary of refusals also says how many it stands for (`count`) and when the first and last were."""
    if not isinstance(raw, Mapping):
        return False
    count = raw.get("count", 1)
    return (
        _is_time(raw.get("time"))
        and isinstance(raw.get("action"), str)
        and isinstance(raw.get("exposition_id"), str)
        and isinstance(count, int)
        and not isinstance(count, bool)
        and 1 <= count <= MAX_COUNT
        and ("count" not in raw or is_refusal(raw))
        and all(_is_time(raw[name]) for name in ("first_time", "last_time") if name in raw)
    )
