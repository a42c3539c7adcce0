"""From a configuration to what the gateway serves: imported services, selected operations.

All of it happens before serving: descriptions are read and converted, include
and exclude patterns are checked (a pattern that selects nothing is an error,
most likely a typo), tool names are checked for clashes between services, and
credentials are read from the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from apimcp.backends.credentials import Credentials, place_all
from apimcp.catalog.base_urls import backend_needed
from apimcp.catalog.model import Operation, Service
from apimcp.catalog.read_only import decided
from apimcp.catalog.selection import nothing_selected, select, unmatched
from apimcp.federation.listing import import_stdio, import_upstream
from apimcp.federation.stdio_channel import StdioCommand
from apimcp.gateway.artifact_files import read_artifact_files
from apimcp.gateway.config import ConfigError, ExpositionConfig, GatewayConfig, ServiceConfig, StdioConfig
from apimcp.gateway.config_positions import KeyPath, errors
from apimcp.importers.errors import SpecError, unreadable_as_spec_errors
from apimcp.importers.graphql import import_graphql
from apimcp.importers.openapi import SchemaLimits, import_openapi
from apimcp.importers.protobuf import import_protobuf
from apimcp.protocol.request_state import MIN_KEY_BYTES
from apimcp.safety.fetch import Fetcher, FetchLimits
from apimcp.safety.yaml_loading import YamlLimits


@dataclass(frozen=True, slots=True)
class PlannedService:
    key: str
    config: ServiceConfig
    service: Service
    operations: tuple[Operation, ...]
    credentials: tuple[Credentials, ...]
    tls: dict[str, str] | None = None
    """PEM texts for a gRPC backend: `ca`, `certificate`, `private_key`."""
    artifacts: tuple[Mapping[str, Any], ...] = ()
    """The service's artifact files, read and checked: `{name, kind, document}` in the order listed."""
    per_user: tuple[Mapping[str, Any], ...] = ()
    """Credentials each user supplies, as a snapshot carries them."""
    clients: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    """OAuth clients (client credentials) whose tokens every call carries, as a snapshot carries them."""


@dataclass(frozen=True, slots=True)
class PlannedExposition:
    name: str
    config: ExpositionConfig
    services: tuple[PlannedService, ...]


@dataclass(frozen=True, slots=True)
class GatewayPlan:
    config: GatewayConfig
    services: dict[str, PlannedService]
    expositions: tuple[PlannedExposition, ...]
    request_state_keys: tuple[bytes, ...] = ()
    """`server.request_state_keys`, read from the environment (none: a key of this process's own)."""
    commands: Mapping[str, StdioCommand] = field(default_factory=dict)
    """How to start the stdio MCP servers, by service key (never part of a snapshot)."""


def import_described(
    config: ServiceConfig,
    location: str,
    include_paths: tuple[str, ...] = (),
    credentials: tuple[Credentials, ...] = (),
    fetcher: Fetcher | None = None,
    yaml_limits: YamlLimits | None = None,
    schema_limits: SchemaLimits | None = None,
) -> Service:
    """The service a configuration describes, imported by the importer of its kind. A live GraphQL endpoint
    is introspected with the service's credentials (those that travel in headers). URLs are read by `fetcher`
    (default: public addresses only), even those of the operator's own file: a public description may
    reference an internal URL."""
    if config.kind == "graphql":
        return import_graphql(
            location,
            name=config.name or "",  # both required for GraphQL by the configuration's checks
            version=config.version or "",
            introspect=config.introspect,
            headers=_introspection_headers(credentials) if config.introspect else None,
            depth=config.depth,
            selections=config.selections,
            tool_prefix=config.tool_prefix,
            fetcher=fetcher,
        )
    if config.kind == "mcp":
        return import_upstream(
            location,
            name=config.name,
            version=config.version,
            headers=_introspection_headers(credentials),
            tool_prefix=config.tool_prefix,
            fetcher=fetcher,
        )
    if config.kind == "grpc":
        return import_protobuf(
            location,
            include_paths=include_paths,
            service=config.service,
            name=config.name,
            version=config.version,
            tool_prefix=config.tool_prefix,
            fetcher=fetcher,
        )
    return import_openapi(
        location,
        name=config.name,
        version=config.version,
        tool_prefix=config.tool_prefix,
        fetcher=fetcher,
        yaml_limits=yaml_limits,
        schema_limits=schema_limits,
    )


def _introspection_headers(credentials: tuple[Credentials, ...]) -> dict[str, str]:
    # An API key in the query is not added: the endpoint URL becomes the service's server.
    return place_all(credentials).headers_with_cookies()


def _read_tls(key: str, config: ServiceConfig, gateway: GatewayConfig) -> dict[str, str] | None:
    if config.tls is None:
        return None
    files = {"ca": "ca_file", "certificate": "certificate_file", "private_key": "key_file"}
    texts = {}
    for role, option in files.items():
        file = getattr(config.tls, option)
        if file is None:
            continue
        try:
            texts[role] = Path(gateway.path(file)).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise gateway.error(("services", key, "tls", option), f"cannot read {file}: {exc}") from exc
    return texts


def plan_service(
    key: str,
    gateway: GatewayConfig,
    fetcher: Fetcher | None = None,
    yaml_limits: YamlLimits | None = None,
    schema_limits: SchemaLimits | None = None,
) -> PlannedService:
    """The service `key` of `gateway` imported, and its operations selected; a mistake names its key and line."""
    config = gateway.services[key]
    at = ("services", key)
    try:
        credentials = config.resolved_credentials()
        per_user = config.per_user_credentials(key)
        clients = config.client_credentials()
    except ConfigError as exc:  # a variable unset since `check_environment`
        raise gateway.error((*at, "credentials"), str(exc)) from exc
    include_paths = tuple(gateway.path(p) for p in config.include_paths)
    try:
        if config.stdio is not None:
            service = import_stdio(
                stdio_command(config.stdio, gateway),
                name=config.name,
                version=config.version,
                tool_prefix=config.tool_prefix,
                timeout_seconds=config.timeout,
                max_message_bytes=config.max_response_bytes,
            )
        else:
            location = gateway.description_location(config)
            reading = config.resolved_import_credentials()
            with unreadable_as_spec_errors(location):
                service = import_described(
                    config, location, include_paths, reading, fetcher, yaml_limits, schema_limits
                )
    except SpecError as exc:
        raise gateway.error((*at, "stdio" if config.stdio is not None else config.kind), str(exc)) from exc
    prefix = config.tool_prefix  # the importer gave it to the tool names: patterns match them with or without it

    def check(field: str, patterns: Sequence[str], among: Sequence[Operation], none: str) -> list[ConfigError]:
        """An error for each pattern of `field` that selects nothing `among` these operations."""
        return [
            gateway.error((*at, field, index), f"{pattern!r} selects no {none}")
            for index, pattern in enumerate(patterns)
            if unmatched(among, [pattern], prefix)
        ]

    typos = [*check("include", config.include, service.operations, "operation"),
             *check("exclude", config.exclude, service.operations, "operation")]  # fmt: skip
    if typos:
        raise errors(*typos)
    operations = tuple(select(service.operations, config.include, config.exclude, prefix))
    if not operations:  # the description has none, or the patterns leave none
        field = config.kind if not service.operations else "exclude" if config.exclude else "include"
        raise gateway.error((*at, field), nothing_selected(service.operations, config.include, config.exclude))
    typos = check("read_only_tools", config.read_only_tools or (), operations, "tool of this service")
    if typos:
        raise errors(*typos)
    operations = tuple(decided(operations, config.read_only_tools, prefix))
    if config.backend is None and (needed := backend_needed(service, operations)) is not None:
        where = "the API's URL" if service.kind != "grpc" else "host:port, grpc://host:port or grpcs://host:port"
        raise gateway.error(at, f"the description {needed}; set 'backend' to {where}")
    return PlannedService(key, config, service, operations, credentials, per_user=per_user, clients=clients)


def stdio_command(config: StdioConfig, gateway: GatewayConfig) -> StdioCommand:
    """How to start a configured stdio server: a program named by a path is found from the file's folder (one
    named alone, on `PATH`), which is also where it runs unless `cwd` says otherwise; secrets read now."""
    # made absolute, symlinks kept: a venv's python is a symlink whose target would leave the venv behind
    program = os.path.normpath(gateway.base_dir / config.command) if "/" in config.command else config.command
    env = {name: value if isinstance(value, str) else value.value() for name, value in config.env.items()}
    cwd = gateway.path(config.cwd) if config.cwd is not None else str(gateway.base_dir)
    secrets = tuple(env[name] for name, value in config.env.items() if not isinstance(value, str))
    return StdioCommand((program, *config.args), env, cwd, secrets)


def plan_gateway(
    config: GatewayConfig,
    *,
    fetch_limits: FetchLimits | None = None,
    yaml_limits: YamlLimits | None = None,
    schema_limits: SchemaLimits | None = None,
) -> GatewayPlan:
    """Import what `config` describes (descriptions read within these limits) and check it can be served."""
    config.check_environment()
    _check_approvers(config)
    keys = _request_state_keys(config)
    services = {}
    fetcher = Fetcher(config.server.fetch_policy(), fetch_limits or FetchLimits())
    for key, service in config.services.items():
        planned = plan_service(key, config, fetcher, yaml_limits, schema_limits)
        artifacts = read_artifact_files(
            key, service, config, planned.service, planned.service.operations, fetcher, yaml_limits
        )
        services[key] = replace(planned, tls=_read_tls(key, service, config), artifacts=artifacts)
    expositions = []
    for name, exposition in config.exposition_map().items():
        members = tuple(services[key] for key in exposition.services)
        owners: dict[str, str] = {}
        for member in members:
            for operation in member.operations:
                other = owners.setdefault(operation.tool_name, member.key)
                if other != member.key:
                    raise config.error(
                        ("expositions", name, "services"),
                        f"services {other!r} and {member.key!r} both offer a tool named {operation.tool_name!r}; "
                        "give one of them a tool_prefix",
                    )
        expositions.append(PlannedExposition(name, exposition, members))
    commands = {key: stdio_command(service.stdio, config) for key, service in config.services.items() if service.stdio}
    return GatewayPlan(config, services, tuple(expositions), keys, commands)


def _check_approvers(config: GatewayConfig) -> None:
    """A configuration file served alone has no control plane, so no administrator to approve calls: a rule that
    asks one is refused here rather than failing every call it holds (`apimcp apply` takes it to a control plane)."""
    written: list[tuple[KeyPath, list[dict[str, Any]] | None]] = [(("policies",), config.policies)]
    written += [(("expositions", name, "policies"), e.policies) for name, e in config.exposition_map().items()]
    for where, rules in written:
        for index, rule in enumerate(rules or ()):
            if rule.get("approver") == "admin":
                raise config.error(
                    (*where, index),
                    f"the rule {rule['name']!r} has approver: admin, which needs a control plane to ask an "
                    "administrator (`apimcp apply` this file to one); a gateway serving a configuration file alone "
                    "can ask only the person behind the caller's client (approver: caller)",
                )


def _request_state_keys(config: GatewayConfig) -> tuple[bytes, ...]:
    keys = []
    for index, ref in enumerate(config.server.request_state_keys):
        key = ref.value().encode()
        if len(key) < MIN_KEY_BYTES:
            raise config.error(
                ("server", "request_state_keys", index),
                f"{ref.env} holds {len(key)} bytes; a requestState key needs at least {MIN_KEY_BYTES}",
            )
        keys.append(key)
    return tuple(keys)
