"""From a configuration to what the gateway serves: imported services, selected operations.

All of it happens before serving: descriptions are read and converted, include
and exclude patterns are checked (a pattern that selects nothing is an error,
most likely a typo), tool names are checked for clashes between services, and
credentials are read from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from apimcp.backends.credentials import Credentials
from apimcp.catalog.model import Operation, RestBinding, Service
from apimcp.catalog.selection import select, unmatched
from apimcp.gateway.config import ConfigError, ExpositionConfig, GatewayConfig, ServiceConfig
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi


@dataclass(frozen=True, slots=True)
class PlannedService:
    key: str
    config: ServiceConfig
    service: Service
    operations: tuple[Operation, ...]
    credentials: Credentials | None


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


def _own_servers(operation: Operation) -> bool:
    return isinstance(operation.binding, RestBinding) and bool(operation.binding.servers)


def plan_service(key: str, config: ServiceConfig, location: str) -> PlannedService:
    try:
        service = import_openapi(location, name=config.name, version=config.version, tool_prefix=config.tool_prefix)
    except SpecError as exc:
        raise ConfigError(f"service {key!r}: {exc}") from exc
    typos = unmatched(service.operations, [*config.include, *config.exclude])
    if typos:
        raise ConfigError(f"service {key!r}: these patterns select no operation: {', '.join(typos)}")
    operations = tuple(select(service.operations, config.include, config.exclude))
    if not operations:
        raise ConfigError(f"service {key!r}: include/exclude leave no operation to expose")
    if config.backend is None and not service.servers and any(not _own_servers(op) for op in operations):
        raise ConfigError(f"service {key!r}: the description declares no servers; set 'backend' to the API's URL")
    try:
        credentials = config.resolved_credentials()
    except ConfigError as exc:
        raise ConfigError(f"service {key!r}: credentials: {exc}") from exc
    return PlannedService(key, config, service, operations, credentials)


def plan_gateway(config: GatewayConfig) -> GatewayPlan:
    services = {key: plan_service(key, c, config.description_location(c)) for key, c in config.services.items()}
    expositions = []
    for name, exposition in config.exposition_map().items():
        members = tuple(services[key] for key in exposition.services)
        owners: dict[str, str] = {}
        for member in members:
            for operation in member.operations:
                other = owners.setdefault(operation.tool_name, member.key)
                if other != member.key:
                    raise ConfigError(
                        f"exposition {name!r}: services {other!r} and {member.key!r} both offer a tool named "
                        f"{operation.tool_name!r}; give one of them a tool_prefix"
                    )
        expositions.append(PlannedExposition(name, exposition, members))
    return GatewayPlan(config, services, tuple(expositions))
