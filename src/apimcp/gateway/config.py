"""The YAML configuration of a gateway: services, expositions and how to serve them.

```yaml
services:
  petstore:
    openapi: ./petstore.yaml          # a path (relative to this file) or an http(s) URL
    backend: http://127.0.0.1:8080    # overrides the description's servers
    timeout: 10                       # seconds
    include: ["GET /pets*", "tag:store"]
    exclude: [delete_pet]
    credentials: {type: bearer, token: {env: PETSTORE_TOKEN}}   # or a list, when calls need several
  library:
    graphql: ./library.graphql        # SDL or introspection JSON; or a live endpoint with `introspect: true`
    name: library                     # GraphQL schemas name no service: name and version are required
    version: "1"
    backend: http://127.0.0.1:4000/graphql
    selections: {book: "{ id title }"}
  shop:
    grpc: ./protos/shop/v1/shop.proto # a .proto, a descriptor set, or grpc://host:port (server reflection)
    include_paths: [./protos]
    backend: grpcs://shop.internal:443
    tls: {ca_file: ./ca.pem}
  notes:
    mcp: https://notes.internal/mcp   # an MCP server (Streamable HTTP, either era): its tools become the service's
    credentials: {type: bearer, token: {env: NOTES_TOKEN}}
  files:
    stdio:                            # a local MCP server this gateway starts (configuration files only)
      command: npx
      args: ["-y", "@modelcontextprotocol/server-filesystem", "./shared"]
      env: {GITHUB_TOKEN: {env: GITHUB_TOKEN}}   # the child's only environment, besides PATH, HOME, LANG...
expositions:
  pets:                               # served at /mcp/pets
    services: [petstore]
    cache: {tools/list: {ttl_ms: 60000, scope: public}}
```

Secrets are never written in the file: credentials name environment variables
(`{env: NAME}`). Every mistake is reported with the file, line and column and
what was expected, and nothing starts until the whole file is right. The file is
read within `YamlLimits` (aliases, depth, expanded size), like every YAML document.

Descriptions named by URL (and the URLs they reference) are fetched like any fetch on
someone's behalf: public addresses only, unless `server.fetch_allow` names the host
(`[descriptions.corp.example, "*.corp.example", 10.20.0.0/16]`). A public description
could reference an internal URL; paths of local files are not fetches.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials, name_problem
from apimcp.backends.targets import api_key_problem, clash_problem, endpoint_problem
from apimcp.catalog.naming import VALID_TOOL_NAME
from apimcp.catalog.read_only import MAX_PATTERNS as MAX_READ_ONLY_PATTERNS
from apimcp.codemode.setting import CodeModeSetting, CodeModeSettingError, parse_code_mode
from apimcp.gateway.config_base import ConfigError as ConfigError  # noqa: PLC0414 - re-exported for its callers
from apimcp.gateway.config_base import EnvRef, _Strict, env_refs
from apimcp.gateway.config_identity import (
    AuthConfig,
    TokenExchangeConfig,
    UserOAuthConfig,
    UserTokenConfig,
    checked_header_policy,
    per_user_snapshot,
)
from apimcp.gateway.config_positions import KeyPath, Positions
from apimcp.guardrails.registry import GuardrailError, as_json, build, parse_guardrails
from apimcp.policies.rules import PolicyError, parse_rules
from apimcp.protocol.cors import normalized_origin
from apimcp.protocol.models import MAX_CACHE_TTL_MS
from apimcp.protocol.tasks.policy import format_task_mode, parse_task_mode
from apimcp.ratelimit.policy import RateLimitError, parse_rate_limits
from apimcp.resilience.settings import ResilienceError, parse_resilience
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.yaml_loading import YamlLimitError, YamlLimits, compose_yaml

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CACHEABLE = ("server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
             "resources/read")  # fmt: skip


class BearerConfig(_Strict):
    type: Literal["bearer"]
    token: EnvRef


class BasicConfig(_Strict):
    type: Literal["basic"]
    username: str | EnvRef
    password: EnvRef


class ApiKeyConfig(_Strict):
    type: Literal["api_key"]
    name: str = Field(min_length=1)
    value: EnvRef
    location: Literal["header", "query", "cookie"] = Field(default="header", alias="in")

    @model_validator(mode="after")
    def _name(self) -> ApiKeyConfig:
        problem = name_problem(self.name, self.location)
        if problem is not None:
            raise ValueError(problem)
        return self


class ClientCredentialsConfig(_Strict):
    """The gateway's own OAuth client (the client credentials grant): a token it fetches, and renews, for every
    call."""

    type: Literal["oauth_client_credentials"]
    token_url: str = Field(pattern=r"^https?://")
    client_id: str = Field(min_length=1)
    client_secret: EnvRef
    scopes: tuple[str, ...] = ()
    audience: str | None = None

    def snapshot(self) -> dict[str, Any]:
        """As a snapshot carries it (the secret read from the environment now)."""
        fields: dict[str, Any] = {"token_url": self.token_url, "client_id": self.client_id, "scopes": list(self.scopes)}
        if self.audience:
            fields["audience"] = self.audience
        return {"kind": self.type, "fields": fields, "values": {"client_secret": self.client_secret.value()}}


StaticCredentials = BearerConfig | BasicConfig | ApiKeyConfig
StaticCredentialsConfig = Annotated[StaticCredentials, Field(discriminator="type")]
CredentialsConfig = Annotated[
    BearerConfig
    | BasicConfig
    | ApiKeyConfig
    | ClientCredentialsConfig
    | UserTokenConfig
    | UserOAuthConfig
    | TokenExchangeConfig,
    Field(discriminator="type"),
]


class StdioConfig(_Strict):
    """A stdio MCP server the gateway starts: `command` with `args`, in `cwd` (relative to the file), with `env`
    as its environment (values written, or `{env: NAME}` for secrets)."""

    command: str = Field(min_length=1, max_length=4096)
    args: tuple[Annotated[str, Field(max_length=4096)], ...] = Field(default=(), max_length=256)
    env: dict[str, str | EnvRef] = Field(default_factory=dict, max_length=256)
    cwd: str | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str | EnvRef]) -> dict[str, str | EnvRef]:
        for name in value:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", name):
                raise ValueError(f"{name[:60]!r} is not an environment variable's name")
        return value


class TlsConfig(_Strict):
    """TLS towards the backend: a CA to trust instead of the system's, and a client certificate."""

    ca_file: str | None = None
    certificate_file: str | None = None
    key_file: str | None = None

    @model_validator(mode="after")
    def _pair(self) -> TlsConfig:
        if (self.certificate_file is None) != (self.key_file is None):
            raise ValueError("a client certificate needs both certificate_file and key_file")
        return self


ServiceKind = Literal["openapi", "graphql", "grpc", "mcp"]


_KIND_ONLY: dict[str, tuple[str, ...]] = {
    "import_credentials": ("mcp",),
    "introspect": ("graphql",),
    "depth": ("graphql",),
    "selections": ("graphql",),
    "include_paths": ("grpc",),
    "service": ("grpc",),
}


class ServiceConfig(_Strict):
    openapi: str | None = Field(default=None, min_length=1, description="path or http(s) URL of an OpenAPI description")
    graphql: str | None = Field(default=None, min_length=1, description="SDL or introspection JSON, or an endpoint")
    grpc: str | None = Field(default=None, min_length=1, description="a .proto, a descriptor set, or grpc(s)://")
    mcp: str | None = Field(default=None, min_length=1, description="an MCP server's http(s) URL")
    stdio: StdioConfig | None = None
    """A local MCP server this gateway starts and speaks to over its standard input and output."""
    name: str | None = None
    version: str | None = None
    backend: str | None = Field(default=None, description="the API's base URL (http or https); gRPC: host:port")
    fallbacks: tuple[str, ...] = Field(default=(), max_length=8)
    """Backend URLs tried in order when the one before cannot be reached, or fails an idempotent call transiently
    (`apimcp.resilience.failover`)."""
    timeout: float = Field(default=30.0, gt=0, le=3600)
    max_response_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    tool_prefix: str = ""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    read_only_tools: tuple[str, ...] | None = Field(default=None, max_length=MAX_READ_ONLY_PATTERNS)
    """Patterns (as `include`'s) of the tools held read-only, every other one not, whatever the description or
    the MCP server claims (`catalog.read_only`); unset: their claims stand."""
    credentials: list[CredentialsConfig] = Field(default_factory=list)
    """One credential, or a list of several that every call carries (a key and a client id in two headers);
    `user_token`, `user_oauth` and `token_exchange` ones are each user's own (`config_identity`)."""
    header_policy: dict[str, Any] | None = None
    """Which client request headers the backend receives (`apimcp.forwarding.policy`)."""
    import_credentials: list[StaticCredentialsConfig] = Field(default_factory=list, max_length=8)
    """MCP servers: what reading the server's lists at import carries instead of `credentials` (a server that
    lists nothing without a token, called with each user's own afterwards); never sent with a call."""
    introspect: bool = False
    """GraphQL: `graphql` is a live endpoint, asked for its schema by introspection."""
    depth: int = Field(default=3, ge=1, le=10)
    """GraphQL: how deep generated selection sets reach into object fields."""
    selections: dict[str, str] = Field(default_factory=dict)
    """GraphQL: selection sets to use instead of the generated ones, by tool name."""
    include_paths: tuple[str, ...] = ()
    """gRPC: folders where the .proto's imports are found (relative to this file)."""
    service: str | None = None
    """gRPC: which service of the file, when it declares several (`package.Service` or `Service`)."""
    tls: TlsConfig | None = None
    artifacts: tuple[str, ...] = ()
    """Prompts, Resources, CustomTools and ToolsOutputFilters files (paths relative to this file, or http(s)
    URLs), in reShapr's format; when several declare the same name, the first listed wins."""

    @field_validator("credentials", "import_credentials", mode="before")
    @classmethod
    def _one_or_several(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("header_policy")
    @classmethod
    def _header_policy(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return checked_header_policy(value)

    @field_validator("backend")
    @classmethod
    def _backend(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = "grpc" if info.data.get("grpc") else "openapi"  # the kinds are fields above this one
        problem = endpoint_problem(kind, value) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("fallbacks")
    @classmethod
    def _fallbacks(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        if value and (info.data.get("mcp") is not None or info.data.get("stdio") is not None):
            raise ValueError("an MCP server has one address: fallbacks are for OpenAPI, GraphQL and gRPC services")
        kind = "grpc" if info.data.get("grpc") else "openapi"
        for endpoint in value:
            problem = endpoint_problem(kind, endpoint)
            if problem is not None:
                raise ValueError(f"{endpoint}: {problem}")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> ServiceConfig:
        given = [kind for kind in ("openapi", "graphql", "grpc", "mcp", "stdio") if getattr(self, kind) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of openapi, graphql, grpc, mcp or stdio: where the service's description (or "
                "server) is"
            )
        if self.stdio is not None:
            for key in ("credentials", "import_credentials", "backend", "tls", "header_policy"):
                if key in self.model_fields_set:
                    raise ValueError(f"{key} does not apply to a stdio server: give it what it needs in stdio.env")
        kind = "mcp" if given[0] == "stdio" else given[0]
        if kind == "mcp" and self.mcp is not None and not re.match(r"^https?://", self.mcp):
            raise ValueError("mcp is the http:// or https:// URL of an MCP server (Streamable HTTP)")
        static = self.static_credentials()
        for credentials in static:
            if isinstance(credentials, ApiKeyConfig):
                problem = api_key_problem(kind, credentials.name, credentials.location)
                if problem is not None:
                    raise ValueError(f"credentials: {problem}")
        every_call = [c for c in self.credentials if isinstance(c, StaticCredentials | ClientCredentialsConfig)]
        clash = clash_problem([(f"[{i}]", *_slot_of(c)) for i, c in enumerate(every_call)])
        if clash is not None:
            raise ValueError(f"credentials: {clash}")
        if kind != "mcp" and any(isinstance(c, UserOAuthConfig) and c.discovers for c in self.credentials):
            raise ValueError(
                "credentials: user_oauth needs authorization_url, token_url and client_id (only an MCP server's "
                "authorization server is discovered)"
            )
        if kind == "graphql" and (not self.name or not self.version):
            raise ValueError("a GraphQL schema names no service: give name and version")
        for key, kinds in _KIND_ONLY.items():
            if kind not in kinds and key in self.model_fields_set:
                raise ValueError(f"{key} only applies to {' or '.join(kinds)} services")
        return self

    @property
    def kind(self) -> ServiceKind:
        if self.mcp is not None or self.stdio is not None:
            return "mcp"
        return "graphql" if self.graphql is not None else "grpc" if self.grpc is not None else "openapi"

    @property
    def source(self) -> str:
        """Where the description is, as written."""
        stdio = self.stdio.command if self.stdio is not None else None
        source = self.openapi or self.graphql or self.grpc or self.mcp or stdio
        assert source is not None  # one of them is set (checked above)
        return source

    @field_validator("tool_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value and (not VALID_TOOL_NAME.fullmatch(value) or len(value) > 32):
            raise ValueError("a tool prefix is at most 32 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value

    def static_credentials(self) -> list[StaticCredentials]:
        return [c for c in self.credentials if isinstance(c, BearerConfig | BasicConfig | ApiKeyConfig)]

    def resolved_credentials(self) -> tuple[Credentials, ...]:
        """The credentials every call carries, their values read from the environment."""
        return tuple(_resolved(c) for c in self.static_credentials())

    def client_credentials(self) -> tuple[dict[str, Any], ...]:
        """The OAuth clients whose tokens every call carries, as a snapshot carries them (secrets read now)."""
        return tuple(c.snapshot() for c in self.credentials if isinstance(c, ClientCredentialsConfig))

    def resolved_import_credentials(self) -> tuple[Credentials, ...]:
        """What reading the description (or the MCP server) carries: `import_credentials` when given, else the
        credentials every call carries."""
        if self.import_credentials:
            return tuple(_resolved(c) for c in self.import_credentials)
        return self.resolved_credentials()

    def per_user_credentials(self, service: str) -> tuple[dict[str, Any], ...]:
        """The credentials each user supplies, as a snapshot carries them (secrets read now)."""
        return tuple(
            per_user_snapshot(service, c)
            for c in self.credentials
            if isinstance(c, UserTokenConfig | UserOAuthConfig | TokenExchangeConfig)
        )


def _slot_of(credentials: StaticCredentials | ClientCredentialsConfig) -> tuple[str, dict[str, str]]:
    if isinstance(credentials, ApiKeyConfig):
        return "api_key", {"name": credentials.name, "location": credentials.location}
    return credentials.type, {}


def _resolved(c: BearerConfig | BasicConfig | ApiKeyConfig) -> Credentials:
    if isinstance(c, BearerConfig):
        return Bearer(c.token.value())
    if isinstance(c, BasicConfig):
        username = c.username if isinstance(c.username, str) else c.username.value()
        return Basic(username, c.password.value())
    return ApiKey(name=c.name, value=c.value.value(), location=c.location)


def checked_rules(value: Any) -> list[dict[str, Any]] | None:
    """Policy rules as written, checked and compiled (a ValueError names the rule and what is wrong)."""
    try:
        rules = parse_rules(value, "the rules")
    except PolicyError as exc:
        raise ValueError(str(exc)) from None
    return [rule.as_json() for rule in rules] if rules else None


class CacheHintConfig(_Strict):
    ttl_ms: int = Field(ge=0, le=MAX_CACHE_TTL_MS)
    scope: Literal["public", "private"] = "private"


class ExpositionConfig(_Strict):
    services: tuple[str, ...] = Field(min_length=1)
    title: str | None = None
    instructions: str | None = None
    output_schemas: bool = True
    cache: dict[str, CacheHintConfig] = Field(default_factory=dict)
    auth: AuthConfig | None = None
    audit: bool = False
    """Write one audit event per request, and per one refused by authentication or a rate limit (`apimcp.audit`)."""
    rate_limit: dict[str, Any] | None = None
    """`{exposition: 100/s, caller: 5/s}` (or `{requests, per_seconds, burst}`): 429 beyond (`apimcp.ratelimit`)."""

    tool_search: bool = False
    """List three tools (search_tools, describe_tools, call_tool) instead of every tool (`apimcp.toolsearch`)."""
    code_mode: CodeModeSetting = "off"
    """List search_tools, describe_tools and execute_code (`apimcp.codemode`): "off" (default), "on" (true) or
    "read_only" (programs call only tools that change nothing)."""
    tasks: str | None = None
    """When tool calls become tasks: "off" (default), "all" or "slow[:5s]" (`docs/tasks.md`); stored canonical,
    None for off."""

    policies: list[dict[str, Any]] | None = None
    """Who may call what, with which arguments, and what answers hide: rules in CEL, after the file's own
    top-level `policies` (`apimcp.policies`, docs/governance.md)."""

    guardrails: list[dict[str, Any]] | None = None
    """Scanners on calls' arguments and answers (secrets, personal_data, injection, or an installed one), each with
    an action: report, redact or block (`apimcp.guardrails`, docs/governance.md)."""

    resilience: dict[str, Any] | None = None
    """Retries of idempotent calls, a circuit breaker per backend, a cache of read-only tools' answers
    (`apimcp.resilience`, docs/governance.md)."""

    @field_validator("policies", mode="before")
    @classmethod
    def _policies(cls, value: Any) -> list[dict[str, Any]] | None:
        return checked_rules(value)

    @field_validator("resilience", mode="before")
    @classmethod
    def _resilience(cls, value: Any) -> dict[str, Any] | None:
        try:
            settings = parse_resilience(value)
        except ResilienceError as exc:
            raise ValueError(str(exc)) from None
        return settings.as_json() if settings else None

    @field_validator("guardrails", mode="before")
    @classmethod
    def _guardrails(cls, value: Any, info: ValidationInfo) -> list[dict[str, Any]] | None:
        try:
            settings = parse_guardrails(value)
            if (info.context or {}).get("gateway", True):  # this process is the gateway: what it cannot run is
                build(settings)  # refused now (`apimcp apply` only hands the file to a control plane)
        except GuardrailError as exc:
            raise ValueError(str(exc)) from None
        return as_json(settings) if settings else None

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, value: Any) -> str | None:
        if value is None or value is False:  # YAML reads an unquoted `off` (or `no`) as false
            return None
        if not isinstance(value, str):
            raise ValueError('a task mode is "off", "all" or "slow" with an optional ":5s" or ":500ms"')
        policy = parse_task_mode(value)  # a ValueError names what is wrong
        return format_task_mode(policy) if policy is not None else None

    @field_validator("code_mode", mode="before")
    @classmethod
    def _code_mode(cls, value: Any) -> CodeModeSetting:
        try:
            return parse_code_mode(value)
        except CodeModeSettingError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        try:
            return parse_rate_limits(value).as_json()
        except RateLimitError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("cache")
    @classmethod
    def _cacheable(cls, value: dict[str, CacheHintConfig]) -> dict[str, CacheHintConfig]:
        unknown = sorted(set(value) - set(CACHEABLE))
        if unknown:
            raise ValueError(f"{', '.join(unknown)} cannot be cached; cacheable results are {', '.join(CACHEABLE)}")
        return value


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    allowed_hosts: tuple[str, ...] = ()
    """Host names (besides loopback) clients may use to reach the gateway (DNS-rebinding protection)."""
    cors_origins: tuple[str, ...] = ()
    """Origins (`https://app.example.com`) whose browser pages may call the MCP endpoints (CORS)."""
    request_state_keys: tuple[EnvRef, ...] = ()
    """Keys sealing 2026-07-28 requestState; every replica needs the same (the first one seals)."""
    public_url: str | None = Field(default=None, pattern=r"^https?://[^/?#\s]+$")
    """The origin clients reach the gateway at (`https://mcp.example.com`): OAuth resource identifiers and
    elicitation links are built on it (default: the scheme and Host of each request)."""
    fetch_allow: tuple[str, ...] = ()
    """Host names, `*.suffix` patterns and CIDR networks that fetches on someone's behalf (descriptions by URL,
    OAuth token endpoints) may reach besides public addresses."""

    @field_validator("cors_origins")
    @classmethod
    def _cors_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(normalized_origin(origin) for origin in value)  # a ValueError names the origin

    @field_validator("fetch_allow")
    @classmethod
    def _fetch_allow(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        AddressPolicy.allowing(value)  # a ValueError names the entry that is wrong
        return value

    def fetch_policy(self) -> AddressPolicy:
        return AddressPolicy.allowing(self.fetch_allow)


class TemplateConfig(_Strict):
    """A plan template of a control plane (`apimcp template`): `apimcp apply` makes or updates it; a gateway serving
    the file has no plans to start from it and leaves it aside."""

    description: str | None = Field(default=None, max_length=2000)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Plan settings as `POST /templates` takes them; the control plane checks them when the file is applied."""


class GatewayConfig(_Strict):
    services: dict[str, ServiceConfig] = Field(min_length=1)
    expositions: dict[str, ExpositionConfig] = Field(default_factory=dict)
    server: ServerConfig = Field(default_factory=ServerConfig)
    policies: list[dict[str, Any]] | None = None
    """Rules for every exposition of the file, before each exposition's own (as an organization's are)."""
    templates: dict[str, TemplateConfig] = Field(default_factory=dict, max_length=1000)
    """Plan templates by name, for `apimcp apply` (a control plane's presets of plan settings)."""
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    _positions: Positions = PrivateAttr(default_factory=lambda: Positions("the configuration"))

    @classmethod
    def of_options(
        cls, openapi: str, backend: str | None, include: tuple[str, ...], exclude: tuple[str, ...]
    ) -> GatewayConfig:
        """`apimcp serve --openapi ...`: one service, `api`, whose mistakes name the options that gave it."""
        service = ServiceConfig(openapi=openapi, backend=backend, include=include, exclude=exclude)
        given = ("openapi", "backend", "include", "exclude")
        options: dict[KeyPath, str] = {("services", "api", key): f"--{key}" for key in given}
        return cls(services={"api": service}).placed(Positions("the command line", options=options))

    def placed(self, positions: Positions) -> GatewayConfig:
        """This configuration, its mistakes reported at `positions` (where the file wrote each key)."""
        self._positions = positions
        return self

    def error(self, at: KeyPath, message: str) -> ConfigError:
        """A mistake about the key at `at` (`("services", "petstore", "include", 0)`), with its file and line."""
        return self._positions.error(at, message)

    def check_environment(self) -> None:
        """Every environment variable the configuration names is set; all those that are not, in one error."""
        unset = [
            self._positions.located(at, f"the environment variable {ref.env} is not set")
            for at, ref in env_refs(self)
            if ref.env not in os.environ
        ]
        if unset:
            raise ConfigError("\n".join(unset))

    @field_validator("policies", mode="before")
    @classmethod
    def _policies(cls, value: Any) -> list[dict[str, Any]] | None:
        return checked_rules(value)

    @field_validator("services", "expositions")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not _NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid name (letters, digits, '_', '.', '-'; up to 64)")
        return value

    @model_validator(mode="after")
    def _references(self) -> GatewayConfig:
        for exposition, config in self.expositions.items():
            missing = [s for s in config.services if s not in self.services]
            if missing:
                raise ValueError(f"exposition {exposition!r} names unknown services: {', '.join(missing)}")
        return self

    def exposition_map(self) -> dict[str, ExpositionConfig]:
        """The configured expositions, or one per service when none is configured."""
        return dict(self.expositions) or {name: ExpositionConfig(services=(name,)) for name in self.services}

    def description_location(self, service: ServiceConfig) -> str:
        location = service.source
        if re.match(r"^(https?|grpcs?)://", location):
            return location
        return self.path(location)

    def path(self, location: str) -> str:
        """A path of the file, resolved against the file's folder."""
        return str((self.base_dir / location).resolve())


def parse_config(
    text: str, source: str, base_dir: Path, limits: YamlLimits | None = None, *, gateway: bool = True
) -> GatewayConfig:
    """Validate a configuration text; errors name `source`, the line and the key. `gateway`: this process serves it
    (guardrails it has not installed are refused; a file only applied to a control plane names them freely)."""
    found: list[Positions] = []
    try:
        document = compose_yaml(
            text, limits, name=source, inspect=lambda node: found.append(Positions.of_document(node, source))
        )
    except yaml.YAMLError as exc:
        problem_mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{problem_mark.line + 1}:{problem_mark.column + 1}: " if problem_mark else f"{source}: "
        problem = getattr(exc, "problem", None) or exc
        if isinstance(exc, YamlLimitError):
            raise ConfigError(f"{where}{problem}") from None
        raise ConfigError(f"{where}not valid YAML: {problem}") from exc
    data = document.data
    if document.node is None or not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with at least a 'services' key")
    (positions,) = found
    try:
        config = GatewayConfig.model_validate({**data, "base_dir": base_dir}, context={"gateway": gateway})
    except ValidationError as exc:
        raise positions.validation_error(exc) from None
    return config.placed(positions)


MAX_CONFIG_BYTES = 16 * 2**20
"""A configuration file's size, at most: it names descriptions and artifacts by path, it does not hold them."""


def load_config(path: str | Path, limits: YamlLimits | None = None, *, gateway: bool = True) -> GatewayConfig:
    file = Path(path)
    try:
        with file.open("rb") as opened:
            data = opened.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the configuration: {exc.strerror}") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{file}: the configuration is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: cannot read the configuration: it is not UTF-8 (byte {exc.start})") from None
    return parse_config(text, str(file), file.resolve().parent, limits, gateway=gateway)
