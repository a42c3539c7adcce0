"""History: a numbered version of each service, artifact, plan, exposition, secret and organization after each
change, saying who made it (the API token's id, name and role), when, and what the object was then.

One hook sees every change: the store's sessions tell `flushed` what they wrote and `committing` what they are
about to commit (`install`), whatever domain function made the change. Before a transaction commits, each object
it created, changed or deleted gets one version holding its state as JSON (`state_of`): a secret's metadata only
(never its values, nor their ciphertext), a service's metadata and the hashes of its description and catalog (not
the description itself), an attached artifact's metadata and hash. A change that leaves the state as the last
version holds it is not a version. The caller is known through `acting`, set by the REST API on its sessions;
without it the change is the control plane's own (a start, an upstream's refresh).

Versions are bounded: each object keeps its newest `RETAINED`; a state larger than `MAX_STATE_BYTES` is kept as
its size and hash. `restore` applies an older version of a plan or an exposition through the same checks as an
update, so gateways receive it as any change, and records it as "rolled back".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from apimcp.control.domain import expositions, plans
from apimcp.control.domain.tokens import Caller
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import (
    ApiToken,
    Artifact,
    Exposition,
    GatewayGroup,
    Organization,
    Plan,
    PlanSecret,
    PlanTemplate,
    Secret,
    Service,
    Version,
    as_utc,
)

CREATED, UPDATED, DELETED, ROLLED_BACK = "created", "updated", "deleted", "rolled back"
KINDS = ("service", "artifact", "plan", "exposition", "secret", "organization", "template")
RESTORABLE = ("plan", "exposition")
RETAINED = 100
"""Versions kept per object: older ones are pruned as new ones come."""
MAX_STATE_BYTES = 1024 * 1024
"""A state larger than this (as JSON) is kept as its size and hash only (and cannot be restored)."""
MAX_LISTED = 200

_MODELS: dict[str, type[Any]] = {
    "service": Service,
    "artifact": Artifact,
    "plan": Plan,
    "exposition": Exposition,
    "secret": Secret,
    "organization": Organization,
    "template": PlanTemplate,
}
_TOUCHED = "apimcp.history.touched"
_ACTOR = "apimcp.history.actor"

Key = tuple[str, str]
"""An object: its kind and id."""


@dataclass(slots=True)
class _Touch:
    organization_id: str
    action: str
    created: bool = False
    deleted_state: dict[str, Any] | None = None
    restored_from: int | None = None


# --- who acts ------------------------------------------------------------------------------------------------


def acting(session: Session, actor: Callable[[], Caller | None]) -> None:
    """Changes committed by `session` are made by whoever `actor` names when they commit (None: the control plane)."""
    session.info[_ACTOR] = actor


def _actor(session: Session) -> tuple[str | None, str | None, str | None]:
    source = session.info.get(_ACTOR)
    caller: Caller | None = source() if source is not None else None
    if caller is None:
        return None, None, None
    if caller.person is not None:  # a person's token: the person made the change, with their role here
        return caller.token_id, caller.person[:100], caller.role
    token = session.get(ApiToken, caller.token_id)
    return caller.token_id, token.name if token is not None else None, caller.kind


# --- what changed --------------------------------------------------------------------------------------------


def _key(instance: object) -> tuple[Key, str] | None:
    """The object whose history `instance` belongs to, and its organization (None: an untracked row)."""
    if isinstance(instance, (Service, Plan, Exposition, Secret)):
        kind = type(instance).__name__.lower()
        return (kind, instance.id), instance.organization_id
    if isinstance(instance, Artifact):
        if instance.role == "main":  # the description: part of its service's state
            return ("service", instance.service_id), instance.organization_id
        return ("artifact", instance.id), instance.organization_id
    if isinstance(instance, PlanSecret) and instance.plan_id is not None:  # a plan's secrets changed
        return ("plan", instance.plan_id), ""
    if isinstance(instance, Organization):
        return ("organization", instance.id), instance.id
    if isinstance(instance, PlanTemplate):
        return ("template", instance.id), instance.organization_id
    return None


def _touched(session: Session) -> dict[Key, _Touch]:
    found: dict[Key, _Touch] = session.info.setdefault(_TOUCHED, {})
    return found


def _before_flush(session: Session, _context: object, _instances: object) -> None:
    """Deleted objects: their state is taken now, while they are whole."""
    touched = _touched(session)
    for instance in session.deleted:
        keyed = _key(instance)
        if keyed is None or keyed[0][0] not in _MODELS or not isinstance(instance, _MODELS[keyed[0][0]]):
            continue
        (kind, object_id), organization_id = keyed
        previous = touched.get((kind, object_id))
        touched[(kind, object_id)] = _Touch(
            organization_id,
            DELETED,
            created=previous is not None and previous.created,
            deleted_state=state_of(session, kind, instance),
        )


def _after_flush(session: Session, _context: object) -> None:
    """Created and changed objects (their ids are known now): their state is taken when the transaction commits."""
    touched = _touched(session)
    for instances, seen in ((session.new, CREATED), (session.dirty, UPDATED), (session.deleted, UPDATED)):
        for instance in instances:
            keyed = _key(instance)
            if keyed is None or (seen == CREATED and isinstance(instance, Organization)):
                continue  # an organization's history is that of its policies
            key, organization_id = keyed
            # a description or a plan's secret link: its service or plan changed
            action = seen if isinstance(instance, _MODELS[key[0]]) else UPDATED
            previous = touched.get(key)
            if previous is not None:
                if action == CREATED and previous.action == UPDATED:
                    previous.action, previous.created = CREATED, True
                continue  # else created stays created, deleted stays deleted
            if not organization_id:
                plan = session.get(Plan, key[1])
                if plan is None:
                    continue
                organization_id = plan.organization_id
            touched[key] = _Touch(organization_id, action, created=action == CREATED)


def restoring(session: Session, organization_id: str, kind: str, object_id: str, number: int) -> None:
    """The object's next version is a rollback to version `number` (and is recorded even if nothing differs)."""
    touched = _touched(session)
    touched[(kind, object_id)] = _Touch(organization_id, ROLLED_BACK, restored_from=number)


def _before_commit(session: Session) -> None:
    write(session)


def install(listen: Callable[[str, Callable[..., None]], None]) -> None:
    """Follow every session of a store (`listen` is its `Store.listen`)."""
    listen("before_flush", _before_flush)
    listen("after_flush", _after_flush)
    listen("before_commit", _before_commit)


# --- states --------------------------------------------------------------------------------------------------


def _moment(value: datetime | None) -> str | None:
    return as_utc(value).isoformat() if value is not None else None


def _plan_state(plan: Plan) -> dict[str, Any]:
    inbound = plan.inbound or {}
    state: dict[str, Any] = {
        "name": plan.name,
        "service_id": plan.service_id,
        "description": plan.description,
        "backend_endpoint": plan.backend_endpoint,
        "fallback_endpoints": plan.fallback_endpoints,
        "read_only_tools": plan.read_only_tools,
        "backend_timeout_ms": plan.backend_timeout_ms,
        "include": list(plan.include or []),
        "exclude": list(plan.exclude or []),
        "secret_ids": [link.secret_id for link in plan.secret_links],
        "tls_secret_id": plan.tls_secret_id,
        "inbound_mode": inbound.get("mode", "none"),
        "header_policy": plan.header_policy,
        "audit": plan.audit,
        "rate_limit": plan.rate_limit,
        "tasks": plan.tasks,
        "tool_search": plan.tool_search,
        "code_mode": plan.code_mode,
        "trust_changes": plan.trust_changes,
        "policies": plan.policies,
        "guardrails": plan.guardrails,
        "resilience": plan.resilience,
        "cache": dict(plan.cache or {}),
        "artifacts": list(plan.artifacts or []),
        "tool_prefix": plan.tool_prefix,
        "output_schemas": plan.output_schemas,
    }
    if inbound.get("mode") == "oauth":
        state["oauth"] = inbound.get("oauth")
        state["introspection_secret_id"] = inbound.get("introspection_secret_id")
    if inbound.get("mode") == "api_key":
        state["api_key_prefix"] = inbound.get("prefix")  # the key's hash stays in the plan
    return state


def _service_state(session: Session, service: Service) -> dict[str, Any]:
    description = session.scalar(
        select(Artifact.content_hash).where(Artifact.service_id == service.id, Artifact.role == "main")
    )
    return {
        "name": service.name,
        "version": service.version,
        "kind": service.kind,
        "operation_count": service.operation_count,
        "description_sha256": description,
        "catalog_sha256": service.compiled_hash,
        "held_catalog_sha256": service.pending_hash,
        "held_changes": len(service.pending_changes or []),
    }


def state_of(session: Session, kind: str, instance: Any) -> dict[str, Any]:
    """What history keeps of an object: never a secret's values, a description or an artifact's content."""
    with session.no_autoflush:
        if kind == "plan":
            return _plan_state(instance)
        if kind == "service":
            return _service_state(session, instance)
        if kind == "exposition":
            return {"name": instance.name, "plan_id": instance.plan_id, "group_id": instance.group_id}
        if kind == "secret":
            return {
                "name": instance.name,
                "kind": instance.kind,
                "description": instance.description,
                "fields": dict(instance.fields or {}),
                "values_sealed_at": _moment(instance.updated_at),
            }
        if kind == "artifact":
            return {
                "name": instance.name,
                "service_id": instance.service_id,
                "kind": instance.kind,
                "capabilities": list(instance.capabilities or []),
                "content_sha256": instance.content_hash,
                "source": instance.source,
            }
        if kind == "template":
            return {"name": instance.name, "description": instance.description, "settings": dict(instance.settings)}
        return {"name": instance.name, "policies": instance.policies}


def _bounded(state: dict[str, Any]) -> dict[str, Any]:
    encoded = orjson.dumps(state)
    if len(encoded) <= MAX_STATE_BYTES:
        return state
    return {"omitted": {"bytes": len(encoded), "sha256": hashlib.sha256(encoded).hexdigest()}}


# --- versions ------------------------------------------------------------------------------------------------


def write(session: Session) -> list[Version]:
    """The versions of what `session` changed since the last call (called before each commit; a route may call it
    sooner to answer with them)."""
    session.flush()
    touched: dict[Key, _Touch] = session.info.pop(_TOUCHED, {})
    if not touched:
        return []
    actor_id, actor_name, actor_role = _actor(session)
    written = []
    with session.no_autoflush:
        for (kind, object_id), touch in touched.items():
            if touch.action == DELETED:
                if touch.created:
                    continue  # created and deleted at once: nothing to remember
                state = touch.deleted_state or {}
            else:
                instance = session.get(_MODELS[kind], object_id)
                if instance is None:
                    continue
                state = state_of(session, kind, instance)
            state = _bounded(state)
            last = session.execute(
                select(Version.number, Version.state)
                .where(
                    Version.organization_id == touch.organization_id,
                    Version.kind == kind,
                    Version.object_id == object_id,
                )
                .order_by(Version.number.desc())
                .limit(1)
            ).first()
            action = touch.action
            if action == UPDATED and last is not None and last.state == state:
                continue  # nothing history shows changed (a heartbeat, a value set again)
            number = (last.number if last is not None else 0) + 1
            version = Version(
                organization_id=touch.organization_id,
                kind=kind,
                object_id=object_id,
                number=number,
                object_name=_name(state),
                action=action,
                restored_from=touch.restored_from,
                state=state,
                actor_token_id=actor_id,
                actor_name=actor_name,
                actor_role=actor_role,
            )
            session.add(version)
            written.append(version)
            if number > RETAINED:
                session.execute(
                    delete(Version).where(
                        Version.organization_id == touch.organization_id,
                        Version.kind == kind,
                        Version.object_id == object_id,
                        Version.number <= number - RETAINED,
                    )
                )
    session.flush()
    return written


def _name(state: Mapping[str, Any]) -> str | None:
    name = state.get("name")
    if not isinstance(name, str):
        return None
    version = state.get("version")
    return (f"{name} {version}" if isinstance(version, str) else name)[:200]


@dataclass(frozen=True, slots=True)
class Page:
    total: int
    items: list[Version]


def listed(
    session: Session,
    organization_id: str,
    kind: str | None = None,
    object_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Page:
    """The organization's versions, newest first."""
    if kind is not None and kind not in KINDS:
        raise Invalid(f"kind is one of {', '.join(KINDS)}", field="kind")
    if not 1 <= limit <= MAX_LISTED:
        raise Invalid(f"limit is 1 to {MAX_LISTED}", field="limit")
    if offset < 0:
        raise Invalid("offset is 0 or more", field="offset")
    conditions = [Version.organization_id == organization_id]
    if kind is not None:
        conditions.append(Version.kind == kind)
    if object_id is not None:
        conditions.append(Version.object_id == object_id)
    total = session.scalar(select(func.count()).select_from(Version).where(*conditions)) or 0
    query = select(Version).where(*conditions).order_by(Version.id.desc()).limit(limit).offset(offset)
    return Page(total, list(session.scalars(query)))


def version(session: Session, organization_id: str, kind: str, object_id: str, number: int) -> Version:
    found = session.scalar(
        select(Version).where(
            Version.organization_id == organization_id,
            Version.kind == kind,
            Version.object_id == object_id,
            Version.number == number,
        )
    )
    if found is None:
        if session.scalar(select(Version.id).where(Version.organization_id == organization_id,
                                                   Version.kind == kind, Version.object_id == object_id)):  # fmt: skip
            raise NotFound(f"{kind} {object_id} has no version {number} (the newest {RETAINED} are kept)")
        raise NotFound(f"no {kind} {object_id!r} in the history")
    return found


def diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """What differs between two states: one entry per changed leaf ({path, before, after}); objects are compared
    key by key (a missing key is null), anything else as a whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after)):
            found.extend(diff(before.get(key), after.get(key), f"{path}.{key}" if path else str(key)))
        return found
    if before == after:
        return []
    return [{"path": path, "before": before, "after": after}]


# --- rollback ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Restored:
    version: Version
    changes: list[dict[str, Any]]
    api_key: str | None = None
    """A plan's new inbound API key, when the version restored one (shown this once)."""


def restore(session: Session, caller: Caller, kind: str, object_id: str, number: int) -> Restored:
    """Apply version `number` of a plan or an exposition as an update would, with the same checks."""
    if kind not in RESTORABLE:
        raise Invalid(f"only {' and '.join(RESTORABLE)} versions can be restored", field="kind")
    target = version(session, caller.organization_id, kind, object_id, number)
    if "omitted" in target.state:
        raise Conflict(f"version {number} of {kind} {object_id} was too large to keep: it cannot be restored")
    current = session.get(_MODELS[kind], object_id)
    if current is None or current.organization_id != caller.organization_id:
        plan_id = target.state.get("plan_id")
        with_plan = (
            f" (its plan {plan_id} too)" if kind == "exposition" and session.get(Plan, plan_id or "") is None else ""
        )
        raise Conflict(f"{kind} {object_id} was deleted{with_plan}: a deleted {kind} cannot be rolled back "
                       "(create it again)")  # fmt: skip
    before = state_of(session, kind, current)
    restoring(session, caller.organization_id, kind, object_id, number)
    api_key = None
    if kind == "plan":
        api_key = _restore_plan(session, caller, current, before, target)
    else:
        _restore_exposition(session, caller, before, target)
    (written,) = [v for v in write(session) if v.kind == kind and v.object_id == object_id]
    return Restored(written, diff(before, written.state), api_key)


def _restore_plan(session: Session, caller: Caller, plan: Plan, before: dict[str, Any], target: Version) -> str | None:
    wanted = target.state
    values = {
        field: wanted.get(field)
        for field in plans.FIELDS - {"secret_id", "inbound_mode", "oauth", "introspection_secret_id"}
        if wanted.get(field) != before.get(field)
    }
    mode = wanted.get("inbound_mode", "none")
    inbound = ("inbound_mode", "oauth", "introspection_secret_id")
    if mode != before.get("inbound_mode") or (
        mode == "oauth" and any(wanted.get(f) != before.get(f) for f in inbound)
    ):  # the same API key mode keeps the key clients hold
        values["inbound_mode"] = mode
        if mode == "oauth":
            values["oauth"] = wanted.get("oauth")
            values["introspection_secret_id"] = wanted.get("introspection_secret_id")
    plans.check_secret_use(caller, values, plan)
    plans.check_trust(caller, values)
    for field in ("secret_ids", "tls_secret_id", "introspection_secret_id"):
        named = values.get(field)
        for secret_id in named if isinstance(named, list) else [named] if named else []:
            secret = session.get(Secret, secret_id)
            if secret is None or secret.organization_id != caller.organization_id:
                raise Conflict(
                    f"version {target.number} of plan {plan.name!r} uses secret {secret_id}, which was deleted "
                    "since: create a secret and update the plan instead",
                    field=field,
                )
    _, key = plans.update(session, caller.organization_id, plan.id, values)
    return key


def _restore_exposition(session: Session, caller: Caller, before: dict[str, Any], target: Version) -> None:
    wanted = target.state
    exposition_id = target.object_id
    plan = session.get(Plan, wanted.get("plan_id", ""))
    if plan is None or plan.organization_id != caller.organization_id:
        raise Conflict(
            f"version {target.number} of exposition {exposition_id} publishes plan {wanted.get('plan_id')}, which "
            "was deleted since: it cannot be rolled back; update the exposition to another plan instead",
            field="plan_id",
        )
    group = session.get(GatewayGroup, wanted.get("group_id", ""))
    if group is None or group.organization_id != caller.organization_id:
        raise Conflict(
            f"version {target.number} of exposition {exposition_id} is on gateway group {wanted.get('group_id')}, "
            "which was deleted since: it cannot be rolled back",
            field="group_id",
        )
    values = {
        field: wanted.get(field) for field in ("plan_id", "group_id", "name") if wanted.get(field) != before[field]
    }
    expositions.update(session, caller.organization_id, exposition_id, values)
