"""The artifact files a configuration lists for a service, read and checked before serving starts.

The same checks as an attachment to a control plane: the file validates against its kind's schema, its
`service` is this service, and every tool or operation it names exists (or is a custom tool of one of
the service's files). A file that fails stops the configuration with its path and the problem's place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apimcp.artifacts.documents import ArtifactDocument, check_against, read_document
from apimcp.artifacts.errors import ArtifactError
from apimcp.catalog.model import Operation, Service
from apimcp.gateway.config import GatewayConfig, ServiceConfig
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import fetch, is_url
from apimcp.safety.fetch import Fetcher
from apimcp.safety.yaml_loading import YamlLimits


def read_artifact_files(
    key: str,
    config: ServiceConfig,
    gateway: GatewayConfig,
    service: Service,
    operations: Sequence[Operation],
    fetcher: Fetcher,
    yaml_limits: YamlLimits | None = None,
) -> tuple[Mapping[str, Any], ...]:
    """`{name, kind, document}` for each of the service's artifact files, in the order listed."""
    documents: list[tuple[str, ArtifactDocument]] = []
    for index, location in enumerate(config.artifacts):
        where = location if is_url(location) else gateway.path(location)
        try:
            document = read_document(fetch(where, fetcher), location, yaml_limits)
        except (SpecError, ArtifactError) as exc:
            raise gateway.error(("services", key, "artifacts", index), str(exc)) from exc
        documents.append((location, document))
    custom_tools = [name for _, d in documents if d.kind == "CustomTools" for name in d.capabilities]
    for index, (_, document) in enumerate(documents):
        try:
            check_against(document, operations, custom_tools, service=(service.name, service.version))
        except ArtifactError as exc:
            raise gateway.error(("services", key, "artifacts", index), str(exc)) from exc
    return tuple({"name": location, "kind": d.kind, "document": d.body} for location, d in documents)
