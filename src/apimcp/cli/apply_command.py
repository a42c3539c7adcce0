"""`apimcp apply FILE`: a gateway configuration file loaded into a control plane.

The YAML of `apimcp serve FILE` describes services and expositions; applying it
makes the same objects in the logged-in organization, and applying it again
brings them up to date (nothing is deleted):

- each service is imported (re-imported in place) and gets a plan named after its key, with its
  backend, timeout, selection, tool prefix and credentials;
- credentials become a secret `<key>-credentials` (a list of several: `<key>-credentials-1`, `-2`..., OAuth
  clients after the others), created or rotated from the environment;
- its artifact files are attached to the service (named after the file), and the plan selects them;
- each of its `templates` is made, or replaced when the organization has one of that name;
- each exposition becomes an exposition of that plan on the default gateway group (or `--group`);
  its cache hints and output-schema choice go to the plan. An exposition of several services has
  no equivalent in the control plane (an exposition publishes one plan) and is refused.

Include and exclude patterns that name tools are matched before the tool prefix in a control plane
(the prefix is the plan's), while `apimcp serve FILE` matches them after it. What the file alone can show
wrong is refused before the first write; what only the control plane can refuse (a pattern selecting no tool
of the imported description, a name another object has) stops the run where it is met, and the objects applied
before it are listed with the refusal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.catalog_commands import upload_description
from apimcp.cli.client import ApiError, ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, find, reporting
from apimcp.cli.output import Format, OutputOption

if TYPE_CHECKING:
    from apimcp.gateway.config import ExpositionConfig, GatewayConfig, ServiceConfig


def _secret_bodies(key: str, service: ServiceConfig) -> list[dict[str, Any]]:
    from apimcp.backends.credentials import ApiKey, Basic, Bearer  # noqa: PLC0415

    # the environment variables the file names are read here
    listed: list[Any] = [*service.resolved_credentials(), *service.client_credentials()]
    bodies = []
    for number, credentials in enumerate(listed, start=1):
        name = f"{key}-credentials" if len(listed) == 1 else f"{key}-credentials-{number}"
        if isinstance(credentials, dict):  # an OAuth client, as a snapshot carries it
            bodies.append({"name": name, **credentials})
        elif isinstance(credentials, Bearer):
            bodies.append({"name": name, "kind": "bearer", "fields": {}, "values": {"token": credentials.token}})
        elif isinstance(credentials, Basic):
            bodies.append(
                {
                    "name": name,
                    "kind": "basic",
                    "fields": {"username": credentials.username},
                    "values": {"password": credentials.password},
                }
            )
        elif isinstance(credentials, ApiKey):
            bodies.append(
                {
                    "name": name,
                    "kind": "api_key",
                    "fields": {"name": credentials.name, "location": credentials.location},
                    "values": {"value": credentials.value},
                }
            )
    bodies.extend(  # each user's own: the control plane keeps how to ask for them
        {"name": f"{key}-{c['name']}", "kind": c["kind"], "fields": c["fields"], "values": c["values"]}
        for c in service.per_user_credentials(key)
    )
    return bodies


def _import_options(service: ServiceConfig) -> dict[str, Any]:
    return {
        "name": service.name,
        "version": service.version,
        "kind": service.kind,
        "grpc_service": service.service,
        "graphql_depth": service.depth if service.kind == "graphql" else None,
        "introspect": service.introspect,
    }


def _secret(api: ControlPlaneClient, body: dict[str, Any]) -> tuple[str, str]:
    existing = [s for s in api.get("/secrets") if s["name"] == body["name"]]
    if existing and existing[0]["kind"] == body["kind"] and existing[0]["fields"] == body["fields"]:
        api.put(f"/secrets/{existing[0]['id']}/values", {"values": body["values"]})
        return existing[0]["id"], "rotated"
    if existing:
        fail(f"secret {body['name']!r} exists with another kind or fields; delete it or rename the service key")
    return api.post("/secrets", body)["id"], "created"


def _artifact_name(location: str) -> str:
    return location.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "artifact"


def _attach(api: ControlPlaneClient, config: GatewayConfig, service_id: str, location: str) -> dict[str, Any]:
    name = _artifact_name(location)
    path = f"/services/{service_id}/artifacts"
    try:
        if re.match(r"^https?://", location):
            attached: dict[str, Any] = api.post(f"{path}/from-url", {"url": location, "name": name})
            return attached
        uploaded: dict[str, Any] = api.upload(path, Path(config.path(location)), {"name": name})
        return uploaded
    except ApiError as exc:
        raise ApiError(f"artifact {location}: {exc}", exc.status, exc.field) from None


def _check_artifact_files(key: str, service: ServiceConfig, config: GatewayConfig) -> None:
    """Each local artifact file read and checked on its own (schema, rules) before anything is written; what it
    names in the service is checked by the control plane when it is attached."""
    from apimcp.artifacts.documents import read_document  # noqa: PLC0415
    from apimcp.artifacts.errors import ArtifactError  # noqa: PLC0415

    for index, location in enumerate(service.artifacts):
        if re.match(r"^https?://", location):
            continue
        at = ("services", key, "artifacts", index)
        try:
            read_document(Path(config.path(location)).read_bytes(), location)
        except OSError as exc:
            fail(str(config.error(at, f"cannot read {location}: {exc.strerror}")), EXIT_USAGE)
        except ArtifactError as exc:
            fail(str(config.error(at, str(exc))), EXIT_USAGE)


def _plan_for(service: ServiceConfig, hints: dict[str, Any], secret_ids: list[str]) -> dict[str, Any]:
    return {
        "backend_endpoint": service.backend,
        "fallback_endpoints": list(service.fallbacks),
        "backend_timeout_ms": round(service.timeout * 1000),
        "include": list(service.include),
        "exclude": list(service.exclude),
        "read_only_tools": list(service.read_only_tools) if service.read_only_tools is not None else None,
        "tool_prefix": service.tool_prefix,
        "secret_ids": secret_ids,
        "artifacts": [_artifact_name(location) for location in service.artifacts],
        "header_policy": service.header_policy,
        **hints,
    }


def _exposition_hints(key: str, config: GatewayConfig, expositions: dict[str, ExpositionConfig]) -> dict[str, Any]:
    """Cache hints and output-schema choice of the expositions of one service (they must agree)."""
    chosen: dict[str, Any] | None = None
    for name, exposition in expositions.items():
        if key not in exposition.services:
            continue
        hints: dict[str, Any] = {
            "cache": {m: h.model_dump() for m, h in exposition.cache.items()},
            "output_schemas": exposition.output_schemas,
            "audit": exposition.audit,
            "rate_limit": exposition.rate_limit,
            "tasks": exposition.tasks,
            "tool_search": exposition.tool_search,
            "code_mode": exposition.code_mode,
            "policies": exposition.policies,
            "guardrails": exposition.guardrails,
            "resilience": exposition.resilience,
        }
        auth = exposition.auth
        if auth is not None and auth.api_key is not None:
            refusal = config.error(
                ("expositions", name, "auth", "api_key"),
                "a control plane issues plans' API keys itself: remove it and run "
                "`apimcp plan update <plan> --inbound api_key`",
            )
            fail(str(refusal), EXIT_USAGE)
        if auth is not None and auth.oauth is not None:
            hints["inbound_mode"] = "oauth"
            hints["oauth"] = auth.inbound()["oauth"]
            if auth.introspection is not None:
                hints["introspection"] = auth.introspection
        if chosen is not None and hints != chosen:
            refusal = config.error(
                ("expositions", name),
                f"the expositions of service {key!r} set different cache hints, output_schemas, audit, rate limits, "
                "tasks, tool search, policies, guardrails, resilience or auth; a plan has one setting",
            )
            fail(str(refusal), EXIT_USAGE)
        chosen = hints
    return chosen or {}


def _apply_templates(api: ControlPlaneClient, config: GatewayConfig, done: list[dict[str, str]]) -> None:
    """Each template of the file made, or replaced (description and settings) when one has its name."""
    existing = {t["name"]: t["id"] for t in api.get("/templates")} if config.templates else {}
    for name, template in config.templates.items():
        body = {"description": template.description, "settings": template.settings}
        try:
            if name in existing:
                api.patch(f"/templates/{existing[name]}", body)
            else:
                api.post("/templates", {"name": name, **body})
        except ApiError as exc:
            raise ApiError(f"template {name}: {exc}", exc.status, exc.field) from None
        done.append({"object": "template", "name": name, "action": "updated" if name in existing else "created"})


def _apply(api: ControlPlaneClient, config: GatewayConfig, group: str | None, done: list[dict[str, str]]) -> None:
    """Apply `config`, noting in `done` each object made or changed as it is (what a refusal midway leaves)."""
    expositions = config.exposition_map()
    for name, exposition in expositions.items():
        if len(exposition.services) != 1:
            refusal = config.error(
                ("expositions", name, "services"),
                "several services: in a control plane an exposition publishes one plan; split it, one exposition "
                "per service",
            )
            fail(str(refusal), EXIT_USAGE)
    for key, service in config.services.items():
        unsupported = [
            option
            for option in ("selections", "tls", "stdio", "import_credentials")
            if option in service.model_fields_set
        ]
        if "stdio" in unsupported:  # a command is started by `apimcp serve FILE` only
            refusal = config.error(
                ("services", key, "stdio"),
                "a stdio server is started only by a gateway serving this file (`apimcp serve FILE`); a control "
                "plane never starts programs",
            )
            fail(str(refusal), EXIT_USAGE)
        if unsupported:
            refusal = config.error(
                ("services", key, unsupported[0]),
                "cannot be loaded into a control plane yet; serve this file with `apimcp serve FILE`",
            )
            fail(str(refusal), EXIT_USAGE)
        _check_artifact_files(key, service, config)
        names = [_artifact_name(location) for location in service.artifacts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            refusal = config.error(("services", key, "artifacts"), f"several files are named {twice[0]!r}; rename one")
            fail(str(refusal), EXIT_USAGE)
    # What the file alone can show wrong is refused before the first write.
    hints = {key: _exposition_hints(key, config, expositions) for key in config.services}
    secrets = {key: _secret_bodies(key, service) for key, service in config.services.items()}
    group_id = find(api, "/gateway-groups", group, "gateway group")["id"] if group else None
    plans: dict[str, str] = {}
    _apply_templates(api, config, done)  # the first writes: a template the control plane refuses stops all
    if config.policies is not None:  # the file's rules are its organization's (an admin token sets them)
        api.put("/organization/policies", {"policies": config.policies})
        done.append({"object": "policies", "name": "organization", "action": "updated"})
    for key, service in config.services.items():
        imported = upload_description(api, config.description_location(service), _import_options(service),
                                      [config.path(p) for p in service.include_paths])  # fmt: skip
        done.append(
            {
                "object": "service",
                "name": f"{imported['name']} {imported['version']}",
                "action": "created" if imported["created"] else "updated",
            }
        )
        for location in service.artifacts:
            attached = _attach(api, config, imported["id"], location)
            done.append({"object": "artifact", "name": attached["name"], "action": "attached"})
        secret_ids = []
        for body in secrets[key]:
            secret_id, action = _secret(api, body)
            secret_ids.append(secret_id)
            done.append({"object": "secret", "name": body["name"], "action": action})
        plan_hints = dict(hints[key])
        introspection = plan_hints.pop("introspection", None)
        if introspection is not None:
            body = {"name": f"{key}-introspection", "kind": "oauth_introspection",
                    "fields": {"url": introspection.url, "client_id": introspection.client_id},
                    "values": {"client_secret": introspection.client_secret.value()}}  # fmt: skip
            plan_hints["introspection_secret_id"], action = _secret(api, body)
            done.append({"object": "secret", "name": body["name"], "action": action})
        values = _plan_for(service, plan_hints, secret_ids)
        existing = [p for p in api.get("/plans", service_id=imported["id"]) if p["name"] == key]
        if existing:
            plans[key] = api.patch(f"/plans/{existing[0]['id']}", values)["id"]
        else:
            plans[key] = api.post("/plans", {"name": key, "service_id": imported["id"], **values})["id"]
        done.append({"object": "plan", "name": key, "action": "updated" if existing else "created"})
    current = {e["name"]: e for e in api.get("/expositions") if e["name"]}
    for name, exposition in expositions.items():
        slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower())
        plan_id = plans[exposition.services[0]]
        if slug in current:
            body = {"plan_id": plan_id, **({"group_id": group_id} if group_id else {})}
            endpoints = api.patch(f"/expositions/{current[slug]['id']}", body)["endpoints"]
            action = "updated"
        else:
            body = {"plan_id": plan_id, "name": slug, **({"group_id": group_id} if group_id else {})}
            endpoints = api.post("/expositions", body)["endpoints"]
            action = "created"
        done.append({"object": "exposition", "name": slug, "action": action, "endpoint": endpoints[0]})


def apply(
    config: Annotated[Path, typer.Argument(help="A gateway configuration (the YAML of `apimcp serve FILE`).")],
    group: Annotated[str | None, typer.Option(help="Gateway group of the expositions (default: 'default').")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Create or update, in the control plane, the services, plans, secrets, expositions and templates a file
    describes."""
    from apimcp.gateway.config import ConfigError, load_config  # noqa: PLC0415

    try:
        loaded = load_config(config, gateway=False)  # the control plane checks what its gateways run
        loaded.check_environment()
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    api = client()
    done: list[dict[str, str]] = []
    with reporting():
        try:
            _apply(api, loaded, group, done)
        except ConfigError as exc:  # an environment variable the file names is not set
            fail(str(exc), EXIT_USAGE)
        except ApiError:  # a refusal midway: what was applied before it stays, and is said
            if done:
                applied = ", ".join(f"{row['object']} {row['name']} ({row['action']})" for row in done)
                output.note(f"applied before the refusal below, and kept: {applied}")
            raise
    columns: list[output.Column] = [
        ("OBJECT", "object"),
        ("NAME", "name"),
        ("ACTION", "action"),
        ("ENDPOINT", "endpoint"),
    ]
    output.rows(done, columns, out, "Nothing to apply.")
