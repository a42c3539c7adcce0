"""The control plane's tables (SQLAlchemy 2). The same schema runs on SQLite and PostgreSQL.

Every object belongs to one organization, and every query filters on it: an
organization never reads or changes another's objects. Each change appends a
row to `changes`; its revision number is what gateways follow.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from apimcp.control.ids import new_id


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything apimcp stores is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


def _id() -> Mapped[str]:
    return mapped_column(String(13), primary_key=True, default=new_id)


def _org() -> Mapped[str]:
    return mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"), index=True)


def _created() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow)


class Organization(Base):
    __tablename__ = "organizations"
    id: Mapped[str] = _id()
    name: Mapped[str] = mapped_column(String(64), unique=True)
    policies: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    """Rules applied to every call of every plan, before the plan's own (`apimcp.policies`); None: none."""
    quota_expositions: Mapped[int | None] = mapped_column(Integer, default=None)
    """How many expositions the organization may have (`control.domain.quotas`); None: no limit."""
    quota_gateway_groups: Mapped[int | None] = mapped_column(Integer, default=None)
    quota_gateways: Mapped[int | None] = mapped_column(Integer, default=None)
    """How many gateways may register in it (a gateway registering again under its name is the same one)."""
    created_at: Mapped[datetime] = _created()


class ApiToken(Base):
    """A bearer token; only its hash is kept. Its kind is its role: "admin", "user" (the editor role), "viewer"
    (read only) or "gateway" (snapshot sync only). It is bound to a person (`user_id`: it then acts with the lesser of
    its kind's role and the person's membership role, and dies with the membership) or else to a service account
    (`service_account`: a named non-person; tokens made before people existed are their own service accounts)."""

    __tablename__ = "api_tokens"
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16))
    prefix: Mapped[str] = mapped_column(String(24))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True, default=None)
    service_account: Mapped[str | None] = mapped_column(String(100), default=None)
    roams: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """A person's token that also acts in their other organizations (`X-Organization`): only one they got by signing
    in (or joining with a code). One an admin issued for them acts only here: an admin of one organization holds no
    key to the others."""


class Service(Base):
    """An imported API; `compiled` is its catalog form (JSON), built once at import."""

    __tablename__ = "services"
    __table_args__ = (UniqueConstraint("organization_id", "name", "version"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16), default="openapi")
    description: Mapped[str | None] = mapped_column(Text)
    compiled: Mapped[bytes] = mapped_column(LargeBinary)
    compiled_hash: Mapped[str] = mapped_column(String(64))
    operation_count: Mapped[int] = mapped_column(Integer)
    pending_compiled: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    """An MCP server's catalog as it lists its tools now, when that differs from what is served: held until an
    admin accepts it (`control.domain.upstream_changes`)."""
    pending_changes: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, default=None)
    """What differs, tool by tool (change, diff, flags)."""
    pending_hash: Mapped[str | None] = mapped_column(String(64), default=None)

    @property
    def held_changes(self) -> int:
        return len(self.pending_changes or [])

    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class Artifact(Base):
    """A file of a service: its main description, or an attached artifact (a document of one of the kinds
    `apimcp.artifacts.documents` reads, validated when attached: snapshots carry `document`, never parse)."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("service_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    content_hash: Mapped[str] = mapped_column(String(64))
    source: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str | None] = mapped_column(String(32))
    """Prompts, Resources, CustomTools or ToolsOutputFilters; None for the main description, and for a file
    attached before artifacts were checked that migration 0005 could not read (snapshots leave it out)."""
    capabilities: Mapped[list[Any]] = mapped_column(default=list)
    """What the document declares: prompt names, resource and template URIs, custom tool or filtered tool names."""
    document: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    """The validated document as JSON data."""
    created_at: Mapped[datetime] = _created()
    """Attachment order: re-attaching a name keeps its row, so its place among the service's artifacts."""


class Secret(Base):
    """Backend credentials: non-secret fields in clear, secret values sealed with AES-GCM."""

    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(32))
    description: Mapped[str | None] = mapped_column(Text)
    fields: Mapped[dict[str, Any]] = mapped_column(default=dict)
    sealed: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class Plan(Base):
    """How a service is exposed: operations, backend, credentials, inbound security, hints."""

    __tablename__ = "plans"
    __table_args__ = (UniqueConstraint("service_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(Text)
    backend_endpoint: Mapped[str | None] = mapped_column(Text)
    backend_timeout_ms: Mapped[int] = mapped_column(Integer, default=30_000)
    include: Mapped[list[Any]] = mapped_column(default=list)
    exclude: Mapped[list[Any]] = mapped_column(default=list)
    secret_links: Mapped[list[PlanSecret]] = relationship(
        order_by="PlanSecret.position", cascade="all, delete-orphan", lazy="selectin"
    )
    """The backend secrets every call carries, in order (see `secret_ids`)."""
    tls_secret_id: Mapped[str | None] = mapped_column(ForeignKey("secrets.id", ondelete="RESTRICT"))
    inbound: Mapped[dict[str, Any]] = mapped_column(default=dict)
    cache: Mapped[dict[str, Any]] = mapped_column(default=dict)
    artifacts: Mapped[list[Any]] = mapped_column(default=list)
    tool_prefix: Mapped[str] = mapped_column(String(32), default="")
    output_schemas: Mapped[bool] = mapped_column(Boolean, default=True)
    header_policy: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Which client request headers backends receive (`apimcp.forwarding.policy`); None: the defaults."""
    audit: Mapped[bool] = mapped_column(Boolean, default=False)
    rate_limit: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Requests the exposition and each caller may make (`apimcp.ratelimit.policy`); None: no limit."""
    tasks: Mapped[str | None] = mapped_column(String(32), nullable=True)
    """When tool calls become tasks: "all" or "slow:1s" (`apimcp.protocol.tasks.policy`); None: never."""
    tool_search: Mapped[bool] = mapped_column(Boolean, default=False)
    """List three tools (search_tools, describe_tools, call_tool) instead of every tool (`apimcp.toolsearch`)."""
    code_mode: Mapped[str] = mapped_column(String(16), default="off", server_default="off")
    """"off", "on" or "read_only": list search_tools, describe_tools and execute_code (`apimcp.codemode`)."""
    trust_changes: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Serve what its MCP server lists now, without waiting for an admin to accept what changed."""
    policies: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    """Who may call what, with which arguments, and what answers hide (`apimcp.policies`); None: no rule."""
    guardrails: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    """Scanners on calls' arguments and answers, with their actions (`apimcp.guardrails`); None: none."""
    resilience: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Retries, circuit breaker, answer cache of its backend (`apimcp.resilience`); None: none."""
    fallback_endpoints: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    """Backend URLs tried in order after `backend_endpoint` (`apimcp.resilience.failover`); None: none."""
    read_only_tools: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    """Patterns of the tools held read-only, every other one not (`catalog.read_only`); None: the claims stand."""
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    @property
    def secret_ids(self) -> list[str]:
        return [link.secret_id for link in self.secret_links]

    @property
    def secret_id(self) -> str | None:
        """The first backend secret (what plans had before they could carry several)."""
        return self.secret_links[0].secret_id if self.secret_links else None


class PlanSecret(Base):
    """One backend secret of a plan: an operation may need several at once (an API key and a client id)."""

    __tablename__ = "plan_secrets"
    plan_id: Mapped[str] = mapped_column(ForeignKey("plans.id", ondelete="CASCADE"), primary_key=True)
    secret_id: Mapped[str] = mapped_column(ForeignKey("secrets.id", ondelete="RESTRICT"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer)


class PlanTemplate(Base):
    """An organization's named preset of plan settings (inbound security, rate limits, header policy, audit...),
    copied into a plan made from it; the plan does not follow the template afterwards (`control.domain.templates`)."""

    __tablename__ = "plan_templates"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(Text)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """Plan fields, checked and kept as a plan keeps them (`domain.plans.SETTINGS`)."""
    created_at: Mapped[datetime] = _created()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class GatewayGroup(Base):
    __tablename__ = "gateway_groups"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = _created()


class Exposition(Base):
    """A plan published on a gateway group."""

    __tablename__ = "expositions"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    plan_id: Mapped[str] = mapped_column(ForeignKey("plans.id", ondelete="CASCADE"), index=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("gateway_groups.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = _created()


class Gateway(Base):
    """A gateway that registered with the control plane (and when it was last seen)."""

    __tablename__ = "gateways"
    __table_args__ = (UniqueConstraint("organization_id", "name"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    fqdns: Mapped[list[Any]] = mapped_column(default=list)
    version: Mapped[str | None] = mapped_column(String(50))
    started_at: Mapped[datetime] = _created()
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    upstreams: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    """What the gateway last said of the MCP servers it fronts: service id -> up, failing or unknown."""


class GatewayKey(Base):
    """The public half of a key pair (X25519) whose private half only gateways hold: snapshot secrets are sealed
    to it. Registered by an admin; a revoked key is never accepted again."""

    __tablename__ = "gateway_keys"
    __table_args__ = (UniqueConstraint("organization_id", "public_key"),)
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    name: Mapped[str] = mapped_column(String(100))
    public_key: Mapped[str] = mapped_column(String(64))
    """The raw 32-byte key, base64url without padding."""
    fingerprint: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = _created()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Change(Base):
    """One change to what gateways serve; the revision orders them."""

    __tablename__ = "changes"
    revision: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(13), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    object_id: Mapped[str] = mapped_column(String(13))
    at: Mapped[datetime] = _created()


class AuditEvent(Base):
    """One audit event a gateway reported (the latest are kept, refusals apart: `control.domain.audit`)."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_trail", "organization_id", "refusal", "id"),
        Index("ix_audit_events_kept_as", "organization_id", "kept_as", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(13), index=True)
    exposition_id: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    event: Mapped[dict[str, Any]] = mapped_column(JSON)
    refusal: Mapped[bool] = mapped_column(Boolean, default=False)
    """Whether it tells of refused requests (`audit.events.is_refusal`): what `GET /audit?refused=` filters by."""
    kept_as: Mapped[str] = mapped_column(String(16), default="answered", server_default="answered")
    """Its trail, each with a retention of its own (`audit.events.retention_of`): refused, routine, decided,
    answered."""


class TrafficCount(Base):
    """What gateways counted of one exposition's requests of one kind (a method, or a tool's calls) in one minute
    or, once rolled up, one hour (`control.domain.traffic`)."""

    __tablename__ = "traffic_counts"
    __table_args__ = (
        UniqueConstraint("organization_id", "exposition_id", "method", "tool", "start", "seconds"),
        Index("ix_traffic_counts_window", "organization_id", "start"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(13))
    exposition_id: Mapped[str] = mapped_column(String(64))
    method: Mapped[str] = mapped_column(String(64))
    tool: Mapped[str] = mapped_column(String(200))
    """The tool's name for `tools/call`; empty for other methods."""
    start: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    seconds: Mapped[int] = mapped_column(Integer)
    """60 for a minute's counts, 3600 for an hour's."""
    calls: Mapped[int] = mapped_column(Integer, default=0)
    outcomes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """Requests by how they ended, but for success (`protocol.observe.Outcome`)."""
    latency: Mapped[list[Any]] = mapped_column(JSON, default=list)
    """Requests per latency bucket (`traffic.histogram.BOUNDS_MS`)."""
    backend: Mapped[list[Any]] = mapped_column(JSON, default=list)
    """Requests per bucket of the time spent waiting on backends (requests that called none are not counted)."""


class Version(Base):
    """One change to a service, artifact, plan, exposition, secret (its metadata only) or an organization's
    policies: who made it, when, and the object's state after it (`control.domain.history`)."""

    __tablename__ = "versions"
    __table_args__ = (
        UniqueConstraint("organization_id", "kind", "object_id", "number"),
        Index("ix_versions_trail", "organization_id", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    organization_id: Mapped[str] = mapped_column(String(13))
    kind: Mapped[str] = mapped_column(String(32))
    object_id: Mapped[str] = mapped_column(String(13))
    number: Mapped[int] = mapped_column(Integer)
    """1 for the object's first version, then one more for each change."""
    object_name: Mapped[str | None] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(16))
    """created, updated, deleted or rolled back."""
    restored_from: Mapped[int | None] = mapped_column(Integer)
    """For a rollback: the version whose state was applied again."""
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    """The object after the change (for a deletion: as it was when deleted); never a secret's values."""
    actor_token_id: Mapped[str | None] = mapped_column(String(13))
    """The API token that made the change; None: the control plane itself (a start, a gateway's report)."""
    actor_name: Mapped[str | None] = mapped_column(String(100))
    actor_role: Mapped[str | None] = mapped_column(String(16))
    at: Mapped[datetime] = _created()


class User(Base):
    """A person, as an identity provider names them: `issuer` and `subject` (the OIDC `iss` and `sub`). People who
    joined by invitation before single sign-on have the issuer "local" and their e-mail as subject."""

    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("issuer", "subject"),)
    id: Mapped[str] = _id()
    issuer: Mapped[str] = mapped_column(String(255))
    subject: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(254), index=True)
    display_name: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created()
    last_sign_in_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Membership(Base):
    """A person's role in an organization: admin, editor or viewer."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("user_id", "organization_id"),)
    id: Mapped[str] = _id()
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    organization_id: Mapped[str] = _org()
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = _created()


class Invitation(Base):
    """An admin's invitation of an e-mail address to an organization with a role; its one-time code is kept as a
    SHA-256 hash. Accepting it makes the membership (`control.domain.people`)."""

    __tablename__ = "invitations"
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = _org()
    email: Mapped[str] = mapped_column(String(254))
    role: Mapped[str] = mapped_column(String(16))
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    invited_by: Mapped[str | None] = mapped_column(String(254))
    """Who invited: the admin's e-mail, or the service account's name."""
    created_at: Mapped[datetime] = _created()
    accepted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    accepted_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), default=None)


class SignInHandoff(Base):
    """A one-time code that hands a person who just signed in (single sign-on) their token: the console or the CLI
    redeems it once, within a minute; only its SHA-256 is kept (`control.domain.sign_ins`)."""

    __tablename__ = "sign_in_handoffs"
    id: Mapped[str] = _id()
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class ApprovalRequest(Base):
    """A call that a policy rule sends to an administrator (`approver: admin`): pending until an admin approves or
    refuses it, or it expires; an approval serves one call, then it is used (`control.domain.approvals`)."""

    __tablename__ = "approval_requests"
    __table_args__ = (
        Index("ix_approval_requests_call", "exposition_id", "tool", "digest"),
        Index("ix_approval_requests_expiry", "organization_id", "expires_at"),
    )
    id: Mapped[str] = _id()
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    exposition_id: Mapped[str] = mapped_column(ForeignKey("expositions.id", ondelete="CASCADE"))
    tool: Mapped[str] = mapped_column(String(200))
    digest: Mapped[str] = mapped_column(String(64))
    """The digest of the call's arguments, as the gateway computes it."""
    caller: Mapped[str] = mapped_column(String(512))
    """Who made the call, as the gateway names them (an issuer and subject, or "anonymous")."""
    question: Mapped[str] = mapped_column(Text)
    """What the admin is asked ("Approve delete_book with bookId=3?"), at most 5000 characters."""
    status: Mapped[str] = mapped_column(String(16))
    """pending, approved, refused or used."""
    created_at: Mapped[datetime] = _created()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    decided_by: Mapped[str | None] = mapped_column(String(254), default=None)
    """The admin who decided: their e-mail, or the service account's token (`domain.people.who`)."""
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class DeliveredReport(Base):
    """A gateway's report (a batch of audit events, or of traffic counts) already kept: the same report sent again,
    after an answer that never reached its gateway, adds nothing (`control.domain.deliveries`)."""

    __tablename__ = "delivered_reports"
    __table_args__ = (Index("ix_delivered_reports_at", "at"),)
    report: Mapped[str] = mapped_column(String(64), primary_key=True)
    """The id the gateway gave the report (random, sent again with the report)."""
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
