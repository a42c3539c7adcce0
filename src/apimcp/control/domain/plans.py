"""Plans: which operations of a service are exposed, against which backend, with which credentials,
behind which inbound security, and with which cache hints.

A plan carries any number of backend secrets (`secret_ids`; `secret_id` sets a
single one), placed together on every call: an operation may need an API key
and a client id at once. Two secrets that would set the same header, query
parameter or cookie are refused here, so a gateway never gets an ambiguous plan.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets as random
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.auth.settings import OAuthSettingsError, parse_oauth
from apimcp.backends.targets import api_key_problem, clash_problem, endpoint_problem
from apimcp.catalog.base_urls import backend_needed
from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import Operation
from apimcp.catalog.read_only import MAX_PATTERNS as MAX_READ_ONLY_PATTERNS
from apimcp.catalog.selection import served, served_selection, unmatched
from apimcp.codemode.setting import CodeModeSettingError, parse_code_mode
from apimcp.control import changes
from apimcp.control.domain import tokens
from apimcp.control.domain.common import check_name, get_owned
from apimcp.control.domain.tokens import Caller
from apimcp.control.errors import Conflict, Invalid
from apimcp.control.models import Artifact, Exposition, Plan, PlanSecret, Secret, Service
from apimcp.control.secret_kinds import INBOUND
from apimcp.forwarding.policy import HeaderPolicyError, normalized
from apimcp.guardrails.registry import GuardrailError, parse_guardrails
from apimcp.guardrails.registry import as_json as guardrail_settings
from apimcp.policies.rules import PolicyError, parse_rules
from apimcp.protocol.models import MAX_CACHE_TTL_MS
from apimcp.protocol.tasks.policy import format_task_mode, parse_task_mode
from apimcp.ratelimit.policy import RateLimitError, parse_rate_limits
from apimcp.resilience.settings import ResilienceError, parse_resilience

CACHEABLE = ("server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
             "resources/read")  # fmt: skip
INBOUND_MODES = ("none", "api_key", "oauth")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{0,32}$")
FIELDS = frozenset(
    {"description", "backend_endpoint", "backend_timeout_ms", "include", "exclude", "secret_id", "secret_ids",
     "tls_secret_id", "inbound_mode", "oauth", "introspection_secret_id", "header_policy", "audit",
     "rate_limit", "tasks", "tool_search", "code_mode", "policies", "guardrails", "resilience", "cache",
     "artifacts", "tool_prefix", "output_schemas", "trust_changes", "fallback_endpoints", "read_only_tools"}
)  # fmt: skip
SETTINGS = frozenset(
    {"backend_timeout_ms", "inbound_mode", "oauth", "introspection_secret_id", "header_policy", "audit", "rate_limit",
     "tasks", "tool_search", "code_mode", "policies", "guardrails", "resilience", "cache", "output_schemas"}
)  # fmt: skip
"""The fields that do not depend on a plan's service: what a template may hold (`domain.templates`)."""


def api_key_hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def checked_prefix(prefix: Any) -> str:
    if prefix is not None and (not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix)):
        raise Invalid("a tool prefix is at most 32 letters, digits, '_', '.' or '-'", field="tool_prefix")
    return prefix or ""


def _patterns(
    name: str, operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str], prefix: str
) -> None:
    """Each pattern must select one of the service's `operations` (of the service `name`), a tool name matching with
    or without the plan's prefix."""
    operations = served(operations, prefix)
    for field, patterns in (("include", include), ("exclude", exclude)):
        for pattern in patterns:
            if not isinstance(pattern, str) or not pattern:
                raise Invalid("operation patterns are non-empty strings", field=field)
        typos = unmatched(operations, patterns, prefix)
        if typos:
            raise Invalid(f"these patterns select no operation of {name}: {', '.join(typos)}", field=field)


def _read_only_patterns(selected: Sequence[Operation], prefix: str, patterns: object) -> None:
    """`read_only_tools` must be patterns each selecting one of the tools the plan serves (`selected`)."""
    if (
        not isinstance(patterns, list)
        or len(patterns) > MAX_READ_ONLY_PATTERNS
        or not all(isinstance(p, str) and p for p in patterns)
    ):
        raise Invalid(
            f"read_only_tools is a list of at most {MAX_READ_ONLY_PATTERNS} tool patterns, or null (the "
            "description's and the server's claims stand)",
            field="read_only_tools",
        )
    typos = unmatched(selected, patterns, prefix)
    if typos:
        raise Invalid(f"these patterns select no tool of the plan: {', '.join(typos)}", field="read_only_tools")


def _apply(session: Session, plan: Plan, service: Service, values: Mapping[str, Any]) -> str | None:
    """Check and set plan fields; returns a newly generated inbound API key, if any."""
    unknown = sorted(set(values) - FIELDS)
    if unknown:
        raise Invalid(f"plans have no field {unknown[0]!r}", field=unknown[0])
    catalog = functools.cache(lambda: decode_service(service.compiled))  # read once, and only if needed

    def selected() -> list[Operation]:
        return served_selection(catalog().operations, plan.include or [], plan.exclude or [], plan.tool_prefix or "")

    if "backend_endpoint" in values:
        endpoint = values["backend_endpoint"]
        problem = endpoint_problem(service.kind, str(endpoint)) if endpoint is not None else None
        if problem is not None:
            raise Invalid(problem, field="backend_endpoint")
        plan.backend_endpoint = endpoint
    if "fallback_endpoints" in values:
        plan.fallback_endpoints = _fallbacks(service.kind, values["fallback_endpoints"]) or None
    _apply_settings(session, plan, values)
    if "tool_prefix" in values:
        plan.tool_prefix = checked_prefix(values["tool_prefix"])
    include = list(values.get("include", plan.include) or [])  # None clears
    exclude = list(values.get("exclude", plan.exclude) or [])
    if "include" in values or "exclude" in values or "tool_prefix" in values:  # a pattern may name a prefixed tool
        if include or exclude:
            _patterns(service.name, catalog().operations, include, exclude, plan.tool_prefix or "")
        plan.include, plan.exclude = include, exclude
    read_only = values.get("read_only_tools", plan.read_only_tools)
    if read_only is not None and ({"read_only_tools", "include", "exclude", "tool_prefix"} & set(values)):
        _read_only_patterns(selected(), plan.tool_prefix or "", read_only)
    if "read_only_tools" in values:
        plan.read_only_tools = None if read_only is None else list(read_only)
    if "secret_id" in values or "secret_ids" in values:
        _set_secrets(session, plan, service, values)
    if "tls_secret_id" in values:
        tls_id = values["tls_secret_id"]
        if tls_id is not None:
            secret = get_owned(session, Secret, plan.organization_id, tls_id, "secret")
            if secret.kind != "tls":
                raise Invalid(f"the TLS secret must be of kind tls, not {secret.kind}", field="tls_secret_id")
        plan.tls_secret_id = tls_id
    if "artifacts" in values:
        plan.artifacts = _artifact_selection(session, service, values["artifacts"])
    if "description" in values:
        plan.description = values["description"]
    if "trust_changes" in values:
        if not isinstance(values["trust_changes"], bool):
            raise Invalid("trust_changes is true or false", field="trust_changes")
        plan.trust_changes = values["trust_changes"]
    if plan.backend_endpoint is None:
        needed = backend_needed(catalog(), selected())
        if needed is not None:
            raise Invalid(f"{service.name} {needed}: the plan needs a backend endpoint (the API's URL)",
                          field="backend_endpoint")  # fmt: skip
    return _apply_inbound(session, plan, service, values)


def _apply_settings(session: Session, plan: Plan, values: Mapping[str, Any]) -> None:
    """Check and set the fields that do not depend on the plan's service (`SETTINGS`, but for inbound security)."""
    if "backend_timeout_ms" in values:
        timeout = values["backend_timeout_ms"]
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 3_600_000:
            raise Invalid("the backend timeout is 1 to 3600000 milliseconds", field="backend_timeout_ms")
        plan.backend_timeout_ms = timeout
    if "cache" in values:
        plan.cache = _cache(values["cache"])
    if "output_schemas" in values:
        plan.output_schemas = bool(values["output_schemas"])
    if "header_policy" in values:
        try:
            plan.header_policy = normalized(values["header_policy"], "header_policy")
        except HeaderPolicyError as exc:
            raise Invalid(str(exc), field=exc.field) from None
    if "audit" in values:
        if not isinstance(values["audit"], bool):
            raise Invalid("audit is true or false", field="audit")
        plan.audit = values["audit"]
    if "rate_limit" in values:
        try:
            plan.rate_limit = parse_rate_limits(values["rate_limit"]).as_json()
        except RateLimitError as exc:
            raise Invalid(str(exc), field=exc.field) from None
    if "tasks" in values:
        plan.tasks = task_mode(values["tasks"])
    if "tool_search" in values:
        if not isinstance(values["tool_search"], bool):
            raise Invalid("tool_search is true or false", field="tool_search")
        plan.tool_search = values["tool_search"]
    if "code_mode" in values:
        try:
            plan.code_mode = parse_code_mode(values["code_mode"])
        except CodeModeSettingError as exc:
            raise Invalid(str(exc), field="code_mode") from None
    if "policies" in values:
        try:
            rules = parse_rules(values["policies"])
        except PolicyError as exc:
            raise Invalid(str(exc), field="policies") from None
        plan.policies = [rule.as_json() for rule in rules] or None
    if "resilience" in values:
        try:
            plan.resilience = parse_resilience(values["resilience"]).as_json() or None
        except ResilienceError as exc:
            raise Invalid(str(exc), field="resilience") from None
    if "guardrails" in values:
        try:
            plan.guardrails = guardrail_settings(parse_guardrails(values["guardrails"])) or None
        except GuardrailError as exc:
            raise Invalid(str(exc), field="guardrails") from None


def _apply_inbound(session: Session, plan: Plan, service: Service | None, values: Mapping[str, Any]) -> str | None:
    """Check and set who may call the plan; returns a newly generated inbound API key, if any."""
    mode = values.get("inbound_mode")
    if mode is None:
        if "oauth" in values or "introspection_secret_id" in values:
            if plan.inbound.get("mode") != "oauth":
                raise Invalid("OAuth settings apply to plans whose inbound_mode is oauth", field="oauth")
            _set_oauth(session, plan, service, values)
        return None
    if mode not in INBOUND_MODES:
        raise Invalid(f"inbound security is one of {', '.join(INBOUND_MODES)}", field="inbound_mode")
    if mode == "none":
        plan.inbound = {"mode": "none"}
        return None
    if mode == "oauth":
        _set_oauth(session, plan, service, values)
        return None
    return renew_api_key(plan)


def _set_oauth(session: Session, plan: Plan, service: Service | None, values: Mapping[str, Any]) -> None:
    """Check and set the plan's OAuth settings (given now, or kept from before) and its introspection secret
    (`service` None: settings without a service, whose tool scopes are checked when a plan is made of them)."""
    previous = plan.inbound if plan.inbound.get("mode") == "oauth" else {}
    raw = values.get("oauth", previous.get("oauth"))
    if raw is None:
        raise Invalid("an OAuth plan needs oauth settings: at least the issuers it trusts", field="oauth")
    try:
        settings = parse_oauth(raw, "oauth")
    except OAuthSettingsError as exc:
        raise Invalid(str(exc), field=exc.field) from None
    tools = _tool_names(session, plan, service) if service is not None else set(settings.tool_scopes)
    unknown = sorted(set(settings.tool_scopes) - tools)
    if unknown:
        raise Invalid(f"oauth.tool_scopes names {unknown[0]!r}, which is not a tool of this plan",
                      field=f"oauth.tool_scopes.{unknown[0]}")  # fmt: skip
    introspection = values.get("introspection_secret_id", previous.get("introspection_secret_id"))
    if introspection is not None:
        secret = get_owned(session, Secret, plan.organization_id, introspection, "secret")
        if secret.kind != "oauth_introspection":
            raise Invalid(f"the introspection secret must be of kind oauth_introspection, not {secret.kind}",
                          field="introspection_secret_id")  # fmt: skip
    plan.inbound = {"mode": "oauth", "oauth": settings.public()}
    if introspection is not None:
        plan.inbound["introspection_secret_id"] = introspection


def _tool_names(session: Session, plan: Plan, service: Service) -> set[str]:
    """Every tool name the plan's expositions may offer: its operations (as prefixed) and attached custom tools."""
    names = {op.tool_name for op in served(decode_service(service.compiled).operations, plan.tool_prefix or "")}
    rows = session.execute(select(Artifact.kind, Artifact.capabilities).where(Artifact.service_id == service.id))
    for kind, capabilities in rows:
        if kind == "CustomTools":
            names.update(str(c) for c in capabilities or ())
    return names


def _artifact_selection(session: Session, service: Service, given: Any) -> list[str]:
    """The attached artifacts a plan serves, by name (none: all of them)."""
    names = list(given or [])
    if not all(isinstance(name, str) for name in names):
        raise Invalid("artifacts is a list of artifact names", field="artifacts")
    rows = session.execute(
        select(Artifact.name, Artifact.kind).where(Artifact.service_id == service.id, Artifact.role == "attached")
    )
    attached = {row.name: row.kind for row in rows}
    for name in names:
        if name not in attached:
            raise Invalid(f"{service.name} has no attached artifact {name!r}", field="artifacts")
        if attached[name] is None:
            raise Invalid(
                f"{name!r} was attached before artifacts were checked and is not a valid artifact document: "
                "attach a valid file under that name first",
                field="artifacts",
            )
    return list(dict.fromkeys(names))


def _set_secrets(session: Session, plan: Plan, service: Service, values: Mapping[str, Any]) -> None:
    """Check and set the plan's backend secrets, from `secret_ids` (a list) or `secret_id` (one, or None)."""
    if "secret_id" in values and "secret_ids" in values:
        raise Invalid("give secret_ids (a list) or secret_id (one secret), not both", field="secret_ids")
    if "secret_ids" in values:
        field, ids = "secret_ids", values["secret_ids"]
        if ids is None:
            ids = []
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise Invalid("secret_ids is a list of secret ids", field=field)
    else:
        field, ids = "secret_id", [] if values["secret_id"] is None else [values["secret_id"]]
    secrets: list[Secret] = []
    for index, secret_id in enumerate(ids):
        where = field if field == "secret_id" else f"secret_ids[{index}]"
        if secret_id in ids[:index]:
            raise Invalid(f"secret {secret_id} is given twice", field=where)
        secret = get_owned(session, Secret, plan.organization_id, secret_id, "secret")
        if secret.kind == "tls":
            raise Invalid(f"a tls secret goes in tls_secret_id, not {field}", field=where)
        if secret.kind in INBOUND:
            raise Invalid(f"an {secret.kind} secret goes in introspection_secret_id, not {field}", field=where)
        if secret.kind == "user_oauth" and secret.fields.get("discover") and service.kind != "mcp":
            raise Invalid(
                f"secret {secret.name!r} discovers an MCP server's authorization server; this plan's service is "
                f"{service.kind}: give the secret authorization_url, token_url and client_id",
                field=where,
            )
        if secret.kind == "api_key":
            problem = api_key_problem(service.kind, secret.fields["name"], secret.fields.get("location", "header"))
            if problem is not None:
                raise Invalid(problem, field=where)
        secrets.append(secret)
    clash = clash_problem([(f"secret {s.name!r}", s.kind, s.fields) for s in secrets])
    if clash is not None:
        raise Invalid(clash, field=field)
    # Links that stay are kept (a delete and an insert of the same key in one flush would collide).
    kept = {link.secret_id: link for link in plan.secret_links}
    links = []
    for position, secret in enumerate(secrets):
        link = kept.get(secret.id) or PlanSecret(secret_id=secret.id)
        link.position = position
        links.append(link)
    plan.secret_links = links


def _cache(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise Invalid("cache hints map methods to {ttl_ms, scope}", field="cache")
    hints = {}
    for method, hint in raw.items():
        if method not in CACHEABLE:
            raise Invalid(f"{method} cannot be cached; cacheable results are {', '.join(CACHEABLE)}", field="cache")
        if not isinstance(hint, Mapping):
            raise Invalid(f"the cache hint of {method} is an object {{ttl_ms, scope}}", field="cache")
        ttl, scope = hint.get("ttl_ms"), hint.get("scope", "private")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or not 0 <= ttl <= MAX_CACHE_TTL_MS or scope not in (
            "public", "private"
        ):  # fmt: skip
            raise Invalid(f"the cache hint of {method} needs ttl_ms from 0 to {MAX_CACHE_TTL_MS} (a year) and scope "
                          "public or private", field="cache")  # fmt: skip
        hints[method] = {"ttl_ms": ttl, "scope": scope}
    return hints


def checked_settings(session: Session, organization_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` (fields of `SETTINGS`) checked exactly as a plan's are, and as a plan keeps them (`"100/s"` as
    `{requests, per_seconds, burst}`, say); a field whose value is the default (None, off) is left out. The tool
    names of `oauth.tool_scopes` are checked when a plan is made of the settings."""
    unknown = sorted(set(values) - SETTINGS)
    if unknown:
        raise Invalid(f"{unknown[0]!r} is not a setting a template holds (those are {', '.join(sorted(SETTINGS))})",
                      field=unknown[0])  # fmt: skip
    scratch = Plan(organization_id=organization_id, inbound={"mode": "none"}, cache={}, backend_timeout_ms=30_000,
                   output_schemas=True)  # fmt: skip
    _apply_settings(session, scratch, values)
    _apply_inbound(session, scratch, None, values)
    kept: dict[str, Any] = {}
    for field in sorted(values):
        if field == "inbound_mode":
            value: Any = scratch.inbound.get("mode") if values[field] is not None else None
        elif field in ("oauth", "introspection_secret_id"):
            value = scratch.inbound.get(field)
        else:
            value = getattr(scratch, field)
        if value is not None and value != {}:
            kept[field] = value
    return kept


def renew_api_key(plan: Plan) -> str:
    """A new inbound API key for the plan (returned once; only its hash is kept)."""
    value = "apimcp_key_" + random.token_urlsafe(24)
    plan.inbound = {"mode": "api_key", "key_hash": api_key_hash(value), "prefix": value[:15]}
    return value


def create(
    session: Session, organization_id: str, service_id: str, name: str, values: Mapping[str, Any]
) -> tuple[Plan, str | None]:
    service = get_owned(session, Service, organization_id, service_id, "service")
    check_name(name)
    if session.scalar(select(Plan).where(Plan.service_id == service.id, Plan.name == name)):
        raise Conflict(f"{service.name} already has a plan {name!r}", field="name")
    plan = Plan(
        organization_id=organization_id,
        service_id=service.id,
        name=name,
        include=[],
        exclude=[],
        inbound={"mode": "none"},
        cache={},
        artifacts=[],
        backend_timeout_ms=30_000,
        tool_prefix="",
        output_schemas=True,
    )
    key = _apply(session, plan, service, {"backend_endpoint": None, **values})
    session.add(plan)
    session.flush()
    return plan, key


def update(session: Session, organization_id: str, plan_id: str, values: Mapping[str, Any]) -> tuple[Plan, str | None]:
    plan = get_owned(session, Plan, organization_id, plan_id, "plan")
    service = get_owned(session, Service, organization_id, plan.service_id, "service")
    key = _apply(session, plan, service, values)
    session.flush()  # sets updated_at, so that the answer shows what a read will
    changes.record(session, organization_id, "plan", plan.id)
    return plan, key


_SECRET_FIELDS = ("secret_id", "secret_ids", "tls_secret_id", "introspection_secret_id")


_WHO_MAY_CALL = ("inbound_mode", "oauth", "introspection_secret_id")


def carries_secrets(plan: Plan) -> bool:
    """Whether the plan holds secrets: its backend's, its TLS one, or the one its OAuth tokens are introspected with
    (which only an admin puts in a plan, and so only an admin copies or points elsewhere)."""
    return bool(plan.secret_ids or plan.tls_secret_id or (plan.inbound or {}).get("introspection_secret_id"))


def check_secret_use(caller: Caller, values: Mapping[str, Any], plan: Plan | None = None) -> None:
    """Only an admin decides where secrets go and who uses them: attaching secrets to a plan, moving a plan that
    carries secrets to another backend (any holder of a user token could otherwise receive them on its own
    server), or changing who may call it (a user token could otherwise open an admin's credentials to anyone, or
    take a new API key to them). Removing secrets, and every other change, is anyone's."""
    if caller.may(tokens.ADMIN):
        return
    if any(values.get(field) for field in _SECRET_FIELDS):
        tokens.require_admin(caller, "attaching secrets to a plan")
    if plan is None or not carries_secrets(plan):
        return
    if "backend_endpoint" in values and values["backend_endpoint"] != plan.backend_endpoint:
        tokens.require_admin(caller, "changing the backend of a plan that carries secrets")
    if "fallback_endpoints" in values and (values["fallback_endpoints"] or None) != plan.fallback_endpoints:
        tokens.require_admin(caller, "changing the backends of a plan that carries secrets")
    if any(field in values for field in _WHO_MAY_CALL):
        tokens.require_admin(caller, "changing who may call a plan that carries secrets")


MAX_FALLBACKS = 8


def _fallbacks(kind: str, raw: object) -> list[str]:
    """Backend URLs after the first, each checked as `backend_endpoint` is."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_FALLBACKS or not all(isinstance(e, str) for e in raw):
        raise Invalid(f"fallback_endpoints is a list of at most {MAX_FALLBACKS} URLs", field="fallback_endpoints")
    if raw and kind == "mcp":
        raise Invalid("an MCP server has one address: fallbacks are for OpenAPI, GraphQL and gRPC services",
                      field="fallback_endpoints")  # fmt: skip
    for endpoint in raw:
        problem = endpoint_problem(kind, endpoint)
        if problem is not None:
            raise Invalid(f"{endpoint}: {problem}", field="fallback_endpoints")
    return list(raw)


def check_trust(caller: Caller, values: Mapping[str, Any]) -> None:
    """Only an admin makes a plan trust its MCP server: it then serves what the server changes without anyone
    reading it first (pinned definitions are the defence against a server that turns hostile)."""
    if values.get("trust_changes") is True:
        tokens.require_admin(caller, "making a plan trust its MCP server's changes")


def check_duplication(caller: Caller, plan: Plan) -> None:
    """A duplicate keeps the plan's secrets and gets an API key of its own: only an admin makes one of a plan that
    carries secrets."""
    if not caller.may(tokens.ADMIN) and carries_secrets(plan):
        tokens.require_admin(caller, "duplicating a plan that carries secrets")


def duplicate(session: Session, organization_id: str, plan_id: str, name: str) -> tuple[Plan, str | None]:
    source = get_owned(session, Plan, organization_id, plan_id, "plan")
    values = {
        "description": source.description,
        "backend_endpoint": source.backend_endpoint,
        "backend_timeout_ms": source.backend_timeout_ms,
        "include": source.include,
        "exclude": source.exclude,
        "secret_ids": source.secret_ids,
        "tls_secret_id": source.tls_secret_id,
        "cache": source.cache,
        "artifacts": source.artifacts,
        "tool_prefix": source.tool_prefix,
        "output_schemas": source.output_schemas,
        "inbound_mode": source.inbound.get("mode", "none"),
        "header_policy": source.header_policy,
        "audit": source.audit,
        "rate_limit": source.rate_limit,
        "tasks": source.tasks,
        "tool_search": source.tool_search,
        "code_mode": source.code_mode,
        "trust_changes": source.trust_changes,
        "read_only_tools": source.read_only_tools,
        "policies": source.policies,
        "guardrails": source.guardrails,
        "resilience": source.resilience,
        "fallback_endpoints": source.fallback_endpoints,
    }
    if source.inbound.get("mode") == "oauth":
        values["oauth"] = source.inbound["oauth"]
        if source.inbound.get("introspection_secret_id"):
            values["introspection_secret_id"] = source.inbound["introspection_secret_id"]
    return create(session, organization_id, source.service_id, name, values)


def delete(session: Session, organization_id: str, plan_id: str) -> None:
    plan = get_owned(session, Plan, organization_id, plan_id, "plan")
    for exposition in session.scalars(select(Exposition).where(Exposition.plan_id == plan.id)):
        session.delete(exposition)
    session.delete(plan)
    changes.record(session, organization_id, "plan", plan_id)


def listed(session: Session, organization_id: str, service_id: str | None = None) -> list[Plan]:
    query = select(Plan).where(Plan.organization_id == organization_id)
    if service_id is not None:
        query = query.where(Plan.service_id == service_id)
    return list(session.scalars(query.order_by(Plan.id)))


def task_mode(value: object) -> str | None:
    """A plan's `tasks` as stored: the canonical mode text, None for off (or null)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise Invalid('tasks is "off", "all" or "slow[:5s]"', field="tasks")
    try:
        policy = parse_task_mode(value)
    except ValueError as exc:
        raise Invalid(str(exc), field="tasks") from None
    return format_task_mode(policy) if policy is not None else None
