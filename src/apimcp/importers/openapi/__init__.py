"""OpenAPI 3.0 / 3.1 and Swagger 2.0 descriptions to catalog Services."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.catalog.model import Service
from apimcp.importers.cpu_budget import CpuBudget
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.loading import DocumentSet, is_url
from apimcp.importers.openapi.operations import OperationBuilder
from apimcp.importers.openapi.schemas import SchemaLimits
from apimcp.importers.openapi.servers import ServerReader
from apimcp.importers.openapi.swagger2 import convert_swagger2
from apimcp.importers.openapi.warnings import WarningLog
from apimcp.safety.fetch import Fetcher
from apimcp.safety.yaml_loading import YamlLimits

__all__ = ["SchemaLimits", "SpecError", "import_openapi"]


def import_openapi(
    source: str,
    *,
    name: str | None = None,
    version: str | None = None,
    tool_prefix: str = "",
    fetcher: Fetcher | None = None,
    document: Mapping[str, Any] | None = None,
    external_references: bool = True,
    headers: Mapping[str, str] | None = None,
    schema_limits: SchemaLimits | None = None,
    yaml_limits: YamlLimits | None = None,
) -> Service:
    """Read an OpenAPI description (file path or http(s) URL) into a Service.

    `document` may hold the already-parsed main document (then `source` only names it and
    anchors its relative references). `external_references=False` refuses references to other
    documents (for uploaded descriptions, which have no location to resolve them against). `headers`
    (credentials) are sent for documents of the main document's origin only. URLs are read by `fetcher`
    (default: public addresses only, default limits); YAML within `yaml_limits`.

    What the description gets wrong is repaired when the intent is unambiguous, else left out, and
    told in the service's `warnings`; what no tool could be made of raises SpecError, and so does an import
    needing more CPU time than `schema_limits.max_cpu_seconds`.
    """
    # The budget starts before loading: what reading and converting the description took counts too.
    budget = CpuBudget((schema_limits or SchemaLimits()).max_cpu_seconds, source)
    documents = DocumentSet(
        source, fetcher, document, external=external_references, headers=headers, yaml_limits=yaml_limits
    )
    main = documents.main()
    if not isinstance(main, dict):
        raise SpecError("an OpenAPI description must be an object", source=source)
    log = WarningLog(documents.main_uri)
    openapi_30 = True
    if main.get("swagger") is not None:
        main = convert_swagger2(main, source=source, warn=log.add_at)
        documents = DocumentSet(
            source, fetcher, main, external=external_references, headers=headers, yaml_limits=yaml_limits
        )
    else:
        declared = main.get("openapi")
        if not isinstance(declared, str) or not declared.startswith("3."):
            raise SpecError('not an OpenAPI description: "openapi" must name version 3.x (or "swagger": "2.0")',
                            source=source, pointer="/openapi")  # fmt: skip
        openapi_30 = declared.startswith("3.0")
    info = main.get("info") if isinstance(main.get("info"), dict) else {}
    title = name or info.get("title")
    if not isinstance(title, str) or not title.strip():
        raise SpecError('the description has no "info.title"; give the service a name', source=source, pointer="/info")
    service_version = version or info.get("version")
    servers = ServerReader(documents.main_uri if is_url(documents.main_uri) else None, source, log)
    builder = OperationBuilder(
        documents,
        openapi_30=openapi_30,
        prefix=tool_prefix,
        source=source,
        log=log,
        limits=schema_limits,
        budget=budget,
        servers=servers,
    )
    operations = builder.build(main)
    description = info.get("description")
    return Service(
        name=title.strip(),
        version=str(service_version) if service_version is not None else "0",
        operations=tuple(operations),
        description=description if isinstance(description, str) else None,
        servers=servers.read(main.get("servers"), "/servers"),
        source=source,
        warnings=log.warnings(),
    )
