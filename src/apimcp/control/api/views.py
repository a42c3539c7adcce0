"""What the API accepts and returns. Secret values never appear in any response model."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from apimcp.catalog.read_only import MAX_PATTERNS as MAX_READ_ONLY_PATTERNS
from apimcp.control.domain.services import ImportOptions
from apimcp.control.models import as_utc
from apimcp.protocol.models import MAX_CACHE_TTL_MS

M = TypeVar("M", bound=BaseModel)


Timestamp = Annotated[datetime, AfterValidator(as_utc)]  # UTC, and said so on the wire


def view(model: type[M], source: object, **extra: Any) -> M:
    """`model` filled from `source`'s attributes, plus fields the record does not have."""
    values = {name: getattr(source, name) for name in model.model_fields if name not in extra and hasattr(source, name)}
    return model.model_validate({**values, **extra})


class View(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- organizations and tokens ------------------------------------------------------------------


class OrganizationView(View):
    id: str
    name: str
    policies: list[dict[str, Any]] | None = None
    created_at: Timestamp


class PolicyTestInput(Input):
    tool: str = Field(max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)
    claims: dict[str, Any] | None = Field(default=None, description="the token's claims (iss and sub at least)")
    client: str | None = Field(default=None, max_length=64, description="the client's address")
    revision: str = Field(default="2025-11-25", max_length=16)


class PoliciesInput(Input):
    policies: list[dict[str, Any]] | None = Field(
        description="rules applied to every call of every plan of the organization, before the plan's own; null or "
        "[]: none"
    )


class OrganizationInput(Input):
    name: str


class TokenView(View):
    id: str
    name: str
    kind: str
    prefix: str
    created_at: Timestamp
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    last_used_at: Timestamp | None
    user_id: str | None = Field(default=None, description="the person the token is bound to")
    service_account: str | None = Field(default=None, description="the service account the token belongs to")


class TokenInput(Input):
    name: str = Field(max_length=100)
    kind: Literal["admin", "user", "viewer", "gateway"] = Field(
        default="user", description="admin: the admin role; user: the editor role; viewer: read only; gateway: sync"
    )
    valid_days: int | None = Field(default=None, ge=1, le=3650)
    user_id: str | None = Field(
        default=None,
        description="bind the token to this member: it acts with at most their role and dies with the membership",
    )
    service_account: str | None = Field(
        default=None, max_length=100, description="the service account it belongs to (default: the token's name)"
    )


class IssuedToken(TokenView):
    token: str = Field(description="the token itself: shown this once, never again")


class IssuedOrganization(OrganizationView):
    token: str = Field(description="a first admin token of the new organization, shown once")


# --- people ------------------------------------------------------------------------------------------


Role = Literal["admin", "editor", "viewer"]


class UserView(View):
    id: str
    issuer: str
    subject: str
    email: str
    display_name: str | None
    created_at: Timestamp
    last_sign_in_at: Timestamp | None


class MemberView(BaseModel):
    user: UserView
    role: str = Field(description="admin, editor or viewer")
    since: Timestamp


class RoleInput(Input):
    role: Role


class MembershipView(BaseModel):
    organization_id: str
    organization: str
    role: str = Field(description="admin, editor or viewer")


class MeView(BaseModel):
    user: UserView | None = Field(description="the person the token is bound to; null: a service account's token")
    service_account: str | None
    token_id: str
    token_kind: str
    organization_id: str = Field(description="where this request acted (see the X-Organization header)")
    organization: str
    role: str = Field(description="the role this token acts with here: admin, editor or viewer")
    memberships: list[MembershipView] = Field(description="the person's organizations and roles")


class InvitationInput(Input):
    email: str = Field(max_length=254)
    role: Role
    valid_days: int = Field(default=7, ge=1, le=90)


class InvitationView(View):
    id: str
    organization_id: str
    email: str
    role: str
    expires_at: Timestamp
    invited_by: str | None
    created_at: Timestamp
    accepted_at: Timestamp | None


class IssuedInvitation(InvitationView):
    code: str = Field(description="the one-time code the invited person accepts with: shown this once, never again")


class AcceptInput(Input):
    code: str = Field(min_length=1, max_length=200)
    display_name: str | None = Field(default=None, max_length=200, description="how a new person is named")


class AcceptedView(BaseModel):
    user: UserView
    organization_id: str
    organization: str
    role: str
    token: str | None = Field(
        description="a token of the new person (when the code alone was sent): shown this once, never again"
    )


# --- services and artifacts --------------------------------------------------------------------


class OperationView(BaseModel):
    tool_name: str
    signature: str
    operation_id: str | None
    title: str | None
    tags: list[str]


class ServiceView(View):
    id: str
    name: str
    version: str
    kind: str
    description: str | None
    operation_count: int
    held_changes: int = Field(
        default=0, description="an MCP server's tools changed since they were imported, held until accepted"
    )
    created_at: Timestamp
    updated_at: Timestamp


class DefinitionChangeView(BaseModel):
    kind: Literal["tool", "prompt", "resource", "template"]
    name: str = Field(description="its name on the MCP server (a resource's URI, a template's URI template)")
    change: Literal["added", "changed", "removed"]
    diff: str = Field(description="a unified diff of the definition as the model reads it")
    flags: list[str] = Field(description="what the new definition holds that is aimed at the model")


class HeldChanges(BaseModel):
    service_id: str
    changes: list[DefinitionChangeView]


class UpstreamHealthView(BaseModel):
    gateway: str
    state: Literal["up", "failing", "unknown"] = Field(
        description="up: the MCP server answers; failing: its last exchange got no answer or a server error; "
        "unknown: not called yet"
    )
    last_seen: Timestamp


class ServiceDetail(ServiceView):
    operations: list[OperationView]
    upstream_health: list[UpstreamHealthView] = Field(
        default_factory=list,
        description="an MCP service: what each gateway seen in the last 5 minutes says of its server",
    )


class ImportedService(ServiceView):
    created: bool
    warnings: list[str] = Field(
        default_factory=list,
        description="what the importer repaired or left out of the description, each with the operation and "
        "the JSON pointer concerned",
    )
    held: list[DefinitionChangeView] = Field(
        default_factory=list,
        description="an MCP server imported again: what it changed, held until an admin accepts it",
    )


class ImportOptionsForm(Input):
    """How to read a description (every field optional)."""

    name: str | None = Field(default=None, description="the service's name (default: the description's)")
    version: str | None = Field(default=None, description="the service's version (default: the description's)")
    kind: Literal["openapi", "graphql", "grpc", "mcp"] | None = Field(
        default=None,
        description="the description's kind (default: detected from the content); mcp: the URL is an MCP server",
    )
    grpc_service: str | None = Field(default=None, description="gRPC: the service to import when there are several")
    graphql_depth: int | None = Field(default=None, ge=1, le=10, description="GraphQL: selection set depth")

    def options(self) -> ImportOptions:
        return ImportOptions(
            kind=self.kind,
            name=self.name,
            version=self.version,
            grpc_service=self.grpc_service,
            graphql_depth=self.graphql_depth,
        )


class ImportByUrl(ImportOptionsForm):
    url: str
    introspect: bool = Field(default=False, description="GraphQL: the URL is a live endpoint, asked its schema")
    secret_id: str | None = Field(
        default=None,
        description="a bearer, basic or api_key (header or cookie) secret sent to read the URL; never stored",
    )

    def options(self) -> ImportOptions:
        return replace(super().options(), introspect=self.introspect)


class ArtifactByUrl(Input):
    url: str
    name: str | None = Field(default=None, description="default: the last segment of the URL's path")


class ArtifactView(View):
    id: str
    service_id: str
    name: str
    role: str = Field(description="main (the service's description) or attached")
    kind: str | None = Field(
        description="Prompts, Resources, CustomTools or ToolsOutputFilters; null for the main description and for "
        "a file attached before artifacts were checked that is not a valid document (it is not served)"
    )
    capabilities: list[str] = Field(
        description="what it declares: prompt names, resource and template URIs, custom tool or filtered tool names"
    )
    content_hash: str
    source: str | None
    created_at: Timestamp


class ImpactedPlanView(View):
    id: str
    name: str
    falls_back_to_all: bool = Field(description="the plan selected no other artifact: it now serves all of them")


class ArtifactDeletionView(View):
    artifact_id: str
    artifact_name: str
    impacted_plans: list[ImpactedPlanView] = Field(
        description="the plans that selected the artifact; it was removed from their selection"
    )


# --- secrets ----------------------------------------------------------------------------------------


class SecretInput(Input):
    name: str
    kind: Literal[
        "bearer",
        "basic",
        "api_key",
        "oauth_client_credentials",
        "tls",
        "user_token",
        "user_oauth",
        "oauth_token_exchange",
        "oauth_introspection",
    ]
    fields: dict[str, Any] = Field(default_factory=dict)
    values: dict[str, str] = Field(default_factory=dict, description="secret values: stored sealed, never returned")
    description: str | None = None


class SecretRotation(Input):
    values: dict[str, str]


class SecretView(View):
    id: str
    name: str
    kind: str
    description: str | None
    fields: dict[str, Any]
    key_id: str
    created_at: Timestamp
    updated_at: Timestamp


# --- plans, groups, expositions, gateways -----------------------------------------------------------


class CacheHintInput(Input):
    ttl_ms: int = Field(ge=0, le=MAX_CACHE_TTL_MS)
    scope: Literal["public", "private"] = "private"


class PlanSettings(Input):
    """The plan fields that do not depend on its service: what a template holds (`domain.plans.SETTINGS`)."""

    backend_timeout_ms: int | None = None
    inbound_mode: Literal["none", "api_key", "oauth"] | None = None
    oauth: dict[str, Any] | None = Field(
        default=None,
        description="inbound_mode oauth: {issuers, jwks_uri, audiences, audience_check, scopes, tool_scopes, "
        "leeway_seconds, algorithms}",
    )
    introspection_secret_id: str | None = Field(
        default=None, description="an oauth_introspection secret: opaque tokens are checked by RFC 7662 introspection"
    )
    header_policy: dict[str, Any] | None = Field(
        default=None, description="which client headers backends receive: {allow, deny, rename, passthrough, forwarded}"
    )
    audit: bool | None = Field(default=None, description="one audit event per request and refused authentication")
    rate_limit: dict[str, Any] | None = Field(
        default=None,
        description="requests the exposition and each caller may make: {exposition: '100/s', caller: '5/s'} or "
        "{requests, per_seconds, burst} each; 429 with Retry-After beyond",
    )
    tasks: str | None = Field(
        default=None,
        description='when tool calls become tasks, for clients that negotiated tasks: "off" (the default), "all" '
        '(every call) or "slow" / "slow:5s" / "slow:500ms" (calls still running after that long; 1 s by default)',
    )
    tool_search: bool | None = Field(
        default=None,
        description="list three tools (search_tools: the best matches for a query, compact; describe_tools: the "
        "full definitions of tools named; call_tool: any allowed tool by name) instead of every tool, for APIs with "
        "hundreds of operations",
    )
    code_mode: str | bool | None = Field(
        default=None,
        description='"on" (or true): list search_tools, describe_tools (with TypeScript declarations) and '
        "execute_code, which runs a JavaScript program calling the tools, each call governed as a direct one; "
        '"read_only": programs call only tools that change nothing; "off" (or false, the default)',
    )
    policies: list[dict[str, Any]] | None = Field(
        default=None,
        description="rules in CEL, read in order: [{name, when, effect: allow|deny|approve|redact, message?, fields?, "
        "approval_seconds?, approver?: caller|admin}]; the first allow, deny or approve rule that holds decides a call "
        "(none: allowed; approve: once a person approves it: the caller's user, or an administrator), redact rules "
        "hide fields of answers; tools a caller may not call are not listed (docs/governance.md)",
    )
    guardrails: list[dict[str, Any]] | None = Field(
        default=None,
        description="scanners on calls' arguments and answers, in order: [{use: secrets|personal_data|injection|"
        "<installed>, action: report|redact|block, on: [arguments, answers], options?}]",
    )
    resilience: dict[str, Any] | None = Field(
        default=None,
        description="{retries: {attempts, backoff_ms, max_backoff_ms, budget_percent, deadline_ms} | true, breaker: "
        "{failures, open_seconds} | true, cache: {ttl_seconds, tools: {<tool>: seconds}} | true}",
    )
    cache: dict[str, CacheHintInput] | None = None
    output_schemas: bool | None = None


class PlanFields(PlanSettings):
    description: str | None = None
    backend_endpoint: str | None = None
    include: list[str] | None = None
    exclude: list[str] | None = None
    secret_id: str | None = Field(default=None, description="one backend secret (sets secret_ids to it alone)")
    secret_ids: list[str] | None = Field(
        default=None, description="the backend secrets every call carries (e.g. an API key and a client id)"
    )
    tls_secret_id: str | None = Field(default=None, description="a tls secret (CA, client certificate) for the backend")
    trust_changes: bool | None = Field(
        default=None,
        description="an MCP server's plan: serve what the server lists now, without waiting for an admin to accept "
        "what it changed (admin token)",
    )
    fallback_endpoints: list[str] | None = Field(
        default=None,
        description="backend URLs tried in order when the one before cannot be reached, or fails an "
        "idempotent call transiently (each with its own circuit breaker); changed by an admin on a plan with secrets",
    )
    read_only_tools: list[str] | None = Field(
        default=None,
        max_length=MAX_READ_ONLY_PATTERNS,
        description="patterns (as include's) of the tools held read-only, every other one not, whatever the "
        "description or the MCP server claims; null: their claims stand",
    )
    artifacts: list[str] | None = None
    tool_prefix: str | None = None


class PlanInput(PlanFields):
    name: str
    service_id: str
    template: str | None = Field(
        default=None,
        description="a template (id or name) whose settings the plan starts with; the request's own fields win",
    )


class PlanPreviewInput(Input):
    service_id: str
    include: list[str] = Field(default_factory=list, max_length=1000)
    exclude: list[str] = Field(default_factory=list, max_length=1000)
    tool_prefix: str | None = None


class PlanView(View):
    id: str
    service_id: str
    name: str
    description: str | None
    backend_endpoint: str | None
    backend_timeout_ms: int
    include: list[str]
    exclude: list[str]
    secret_id: str | None = Field(description="the first of secret_ids")
    secret_ids: list[str]
    tls_secret_id: str | None
    inbound_mode: str
    oauth: dict[str, Any] | None = None
    introspection_secret_id: str | None = None
    header_policy: dict[str, Any] | None
    audit: bool
    rate_limit: dict[str, Any] | None = None
    tasks: str | None = None
    tool_search: bool = False
    code_mode: str = "off"
    trust_changes: bool = False
    policies: list[dict[str, Any]] | None = None
    guardrails: list[dict[str, Any]] | None = None
    resilience: dict[str, Any] | None = None
    fallback_endpoints: list[str] | None = None
    read_only_tools: list[str] | None = None
    cache: dict[str, Any]
    artifacts: list[str]
    tool_prefix: str
    output_schemas: bool
    created_at: Timestamp
    updated_at: Timestamp


class PlanResult(PlanView):
    api_key: str | None = Field(default=None, description="a new inbound API key: shown this once")


# --- quotas and templates ----------------------------------------------------------------------------


class QuotaView(BaseModel):
    limit: int | None = Field(description="how many the organization may have; null: no limit")
    used: int = Field(description="how many it has")


class QuotasView(BaseModel):
    expositions: QuotaView
    gateway_groups: QuotaView
    gateways: QuotaView = Field(description="registered gateways (one per name)")


Quota = Annotated[int | None, Field(ge=0, le=1_000_000)]


class QuotasInput(Input):
    """Each quota given is set (null: no limit); one left out stays as it is."""

    expositions: Quota = None
    gateway_groups: Quota = None
    gateways: Quota = None


class TemplateView(View):
    id: str
    name: str
    description: str | None
    settings: dict[str, Any] = Field(description="plan fields, as a plan keeps them")
    created_at: Timestamp
    updated_at: Timestamp


class TemplateInput(Input):
    name: str
    description: str | None = Field(default=None, max_length=2000)
    settings: PlanSettings = Field(default_factory=PlanSettings)


class TemplateUpdate(Input):
    name: str | None = None
    description: str | None = Field(default=None, max_length=2000)
    settings: PlanSettings | None = Field(default=None, description="replaces every setting of the template")


class DuplicateInput(Input):
    name: str


class GroupInput(Input):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)


class GroupUpdate(Input):
    labels: dict[str, str]


class GroupView(View):
    id: str
    name: str
    labels: dict[str, str]
    created_at: Timestamp


class ExpositionInput(Input):
    plan_id: str
    group_id: str | None = None
    name: str | None = None


class ExpositionUpdate(Input):
    plan_id: str | None = None
    group_id: str | None = None
    name: str | None = Field(default=None, description="a new name; null removes the name")


class ExpositionDuplicate(Input):
    name: str | None = None


class ExpositionView(View):
    id: str
    plan_id: str
    group_id: str
    name: str | None
    created_at: Timestamp
    endpoints: list[str] = Field(default_factory=list)


class GatewayView(View):
    id: str
    name: str
    labels: dict[str, str]
    fqdns: list[str]
    version: str | None
    started_at: Timestamp
    last_seen: Timestamp


class UpstreamStates(Input):
    name: str = Field(min_length=1, max_length=100)
    upstreams: dict[str, str] = Field(max_length=5000, description="service id -> up, failing or unknown")


class GatewayRegistration(Input):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    fqdns: list[str] = Field(default_factory=list)
    version: str | None = Field(default=None, max_length=50)
    known_services: list[str] = Field(default_factory=list)
    public_key: str | None = Field(
        default=None, description="the gateway's public key (registered as a gateway key): secrets are sealed to it"
    )


REPORT_ID = Field(
    default=None, pattern=r"^[A-Za-z0-9_-]{16,64}$",
    description="the report's id, the same when it is sent again: a report already kept is not kept twice",
)  # fmt: skip


class AuditBatch(Input):
    events: list[dict[str, Any]] = Field(max_length=1000)
    report: str | None = REPORT_ID


class TrafficReport(Input):
    name: str = Field(min_length=1, max_length=100)
    revision: int = Field(ge=0, le=2**31 - 1, description="the revision the gateway serves")
    rows: list[dict[str, Any]] = Field(max_length=1000, description="counts per exposition, method, tool and minute")
    report: str | None = REPORT_ID


class AuditKept(View):
    kept: int
    dropped: int


class UpstreamChanged(Input):
    service: str = Field(min_length=1, max_length=64, description="the id of the MCP service whose server changed")


class Rereading(View):
    rereading: bool
    """False when the service was asked less than a minute ago (or is none of the organization's, unsaid)."""


class GatewayKeyInput(Input):
    name: str
    public_key: str = Field(description="the public half of an X25519 key pair: 32 bytes in unpadded base64url")


class GatewayKeyView(View):
    id: str
    name: str
    public_key: str
    fingerprint: str
    created_at: Timestamp
    revoked_at: Timestamp | None


class Revision(BaseModel):
    revision: int
