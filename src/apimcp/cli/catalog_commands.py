"""`apimcp import`, `attach` and `service`: API descriptions in the control plane."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.client import ApiError, ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, find, find_service, reporting
from apimcp.cli.output import Format, OutputOption

service_app = typer.Typer(
    help="Imported services: list, show, delete; an MCP server's changes: refresh, changes, accept, reject.",
    no_args_is_help=True,
)
SERVICE_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("VERSION", "version"),
    ("KIND", "kind"),
    ("OPERATIONS", "operation_count"),
    ("HELD", "held_changes"),
    ("UPDATED", "updated_at"),
]
DEFAULT_PLAN = "default"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:100] or "api"


def upload_description(
    api: ControlPlaneClient,
    source: str,
    options: dict[str, Any],
    include_paths: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """Import `source` (a file, an http(s) URL, or a grpc(s):// server) with the import `options`
    (name, version, kind, grpc_service, graphql_depth, introspect, secret). A .proto file is compiled here,
    with its imports found in `include_paths`, and sent as a descriptor set: the control plane cannot see them.
    `secret` (id or name) authenticates the control plane when it reads a URL."""
    given = {key: value for key, value in options.items() if value not in (None, False)}
    secret = given.pop("secret", None)
    if re.match(r"^(https?|grpcs?)://", source):
        if secret:
            given["secret_id"] = find(api, "/secrets", secret, "secret")["id"]
        by_url: dict[str, Any] = api.post("/services", {"url": source, **given})
        return by_url
    if secret:
        fail("--secret authenticates reading a URL; a file is sent as it is", EXIT_USAGE)
    if given.get("introspect"):
        fail("--introspect asks a live GraphQL endpoint: give its http(s) URL", EXIT_USAGE)
    path = Path(source)
    if not path.is_file():
        fail(f"{source} is neither a file nor a URL (http, https, grpc or grpcs)")
    fields = {key: str(value) for key, value in given.items()}
    if path.suffix == ".proto" and given.get("kind") in (None, "grpc"):
        from apimcp.importers.errors import SpecError  # noqa: PLC0415 - the protobuf compiler loads only when used
        from apimcp.importers.protobuf import compile_protos  # noqa: PLC0415

        try:
            descriptors = compile_protos([str(path)], [*include_paths, str(path.parent)])  # first match names it
        except SpecError as exc:
            fail(str(exc))
        compiled: dict[str, Any] = api.upload(
            "/services", path.with_suffix(".protoset"), {**fields, "kind": "grpc"}, descriptors
        )
        return compiled
    if include_paths:
        fail("--proto-path goes with a .proto file", EXIT_USAGE)
    uploaded: dict[str, Any] = api.upload("/services", path, fields)
    return uploaded


def import_command(
    source: Annotated[
        str,
        typer.Argument(
            help="The API description: a file or http(s) URL (OpenAPI, GraphQL SDL or introspection JSON, "
            ".proto or descriptor set), a live GraphQL endpoint (with --introspect), grpc(s)://host:port "
            "(server reflection) or an MCP server's URL (with --mcp)."
        ),
    ],
    name: Annotated[str | None, typer.Option(help="Service name (default: the description's title).")] = None,
    version: Annotated[str | None, typer.Option(help="Service version (default: the description's).")] = None,
    kind: Annotated[
        str | None, typer.Option(help="openapi, graphql, grpc or mcp (default: detected from the description).")
    ] = None,
    mcp: Annotated[
        bool, typer.Option("--mcp", help="SOURCE is an MCP server's URL (Streamable HTTP): import its tools.")
    ] = False,
    proto_path: Annotated[
        list[str], typer.Option("--proto-path", "-I", help="A folder where a .proto's imports are found.")
    ] = [],
    grpc_service: Annotated[
        str | None, typer.Option(help="gRPC: the service to import when the file declares several.")
    ] = None,
    introspect: Annotated[
        bool, typer.Option(help="GraphQL: SOURCE is a live endpoint; ask it for its schema.")
    ] = False,
    depth: Annotated[
        int | None, typer.Option(min=1, max=10, help="GraphQL: how deep generated selection sets go.")
    ] = None,
    secret: Annotated[
        str | None,
        typer.Option(help="A secret (id or name) the control plane sends to read the URL (bearer, basic, api_key)."),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="The API's base URL: also creates a default plan and an exposition.")
    ] = None,
    include: Annotated[list[str], typer.Option(help="Expose only these operations (with a default plan).")] = [],
    exclude: Annotated[list[str], typer.Option(help="Do not expose these operations (with a default plan).")] = [],
    expose: Annotated[str | None, typer.Option(help="Name of the exposition (default: from the service name).")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Import (or re-import, updating in place) an API description as a service.

    With --backend, --include, --exclude or --expose, the service is also exposed in one step:
    a plan named 'default' (created or updated) and an exposition of it on the default gateway group.
    """
    if mcp:
        if kind not in (None, "mcp"):
            fail("--mcp imports an MCP server: leave out --kind", EXIT_USAGE)
        if not re.match(r"^https?://", source):
            fail("--mcp takes the MCP server's http(s) URL (a stdio server only in `apimcp serve CONFIG`)", EXIT_USAGE)
        kind = "mcp"
    api = client()
    with reporting():
        options = {
            "name": name,
            "version": version,
            "kind": kind,
            "grpc_service": grpc_service,
            "graphql_depth": depth,
            "introspect": introspect,
            "secret": secret,
        }
        service = upload_description(api, source, options, proto_path)
        result: dict[str, Any] = {"service": service}
        if backend or include or exclude or expose:
            plan = _default_plan(api, service, backend, include, exclude)
            result["plan"] = plan
            result["exposition"] = _exposition_of(api, plan, expose or _slug(service["name"]))
    if out is Format.json:
        output.record(result, out)
        return
    verb = "Imported" if service["created"] else "Updated"
    typer.echo(
        f"{verb} service {service['name']} {service['version']} ({service['operation_count']} operations), "
        f"id {service['id']}"
    )
    warnings = service.get("warnings") or []
    if warnings:  # what the importer repaired or left out of the description
        typer.echo(f"{len(warnings)} warning{'s' if len(warnings) > 1 else ''} about the description:", err=True)
        for warning in warnings:
            typer.echo(f"  {warning}", err=True)
    held = service.get("held") or []
    if held:  # an MCP server imported again: what it changed is not served until accepted
        typer.echo(
            f"{len(held)} changes of the server's tools are held, not served, until an admin accepts them: "
            f"apimcp service changes {service['name']}:{service['version']}",
            err=True,
        )
    if "exposition" in result:
        typer.echo(f"Plan {result['plan']['name']} ({result['plan']['id']}) exposed at:")
        for endpoint in result["exposition"]["endpoints"]:
            typer.echo(f"  {api.url}{endpoint}")


def _default_plan(
    api: ControlPlaneClient, service: dict[str, Any], backend: str | None, include: list[str], exclude: list[str]
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if backend is not None:
        values["backend_endpoint"] = backend
    if include:
        values["include"] = include
    if exclude:
        values["exclude"] = exclude
    existing = [p for p in api.get("/plans", service_id=service["id"]) if p["name"] == DEFAULT_PLAN]
    if existing:
        plan: dict[str, Any] = api.patch(f"/plans/{existing[0]['id']}", values)
    else:
        plan = api.post("/plans", {"name": DEFAULT_PLAN, "service_id": service["id"], **values})
    return plan


def _exposition_of(api: ControlPlaneClient, plan: dict[str, Any], name: str) -> dict[str, Any]:
    """The plan's exposition: an existing one, else a new one named `name` (unnamed if that name is taken)."""
    for exposition in api.get("/expositions"):
        if exposition["plan_id"] == plan["id"]:
            return dict(exposition)
    try:
        created: dict[str, Any] = api.post("/expositions", {"plan_id": plan["id"], "name": name})
    except ApiError as exc:
        if exc.status != 409:
            raise
        output.note(f"an exposition named {name!r} exists already; this one has no name (use `apimcp expo update`)")
        created = api.post("/expositions", {"plan_id": plan["id"]})
    return created


def attach_command(
    service: Annotated[str, typer.Argument(help="The service: id, name or name:version.")],
    source: Annotated[str, typer.Argument(help="The artifact (YAML or JSON): a file or an http(s) URL.")],
    name: Annotated[str | None, typer.Option(help="Artifact name (default: the file name).")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Attach an artifact to a service (an artifact of the same name is replaced)."""
    api = client()
    with reporting():
        found = find_service(api, service)
        if re.match(r"^https?://", source):
            artifact = api.post(f"/services/{found['id']}/artifacts/from-url", {"url": source, "name": name})
        else:
            path = Path(source)
            if not path.is_file():
                fail(f"{source} is neither a file nor an http(s) URL")
            artifact = api.upload(f"/services/{found['id']}/artifacts", path, {"name": name})
    output.record(artifact, out, title=f"Attached {artifact['name']} to {found['name']} {found['version']}")


@service_app.command("list")
def list_services(out: OutputOption = Format.table) -> None:
    """The organization's services."""
    api = client()
    with reporting():
        output.rows(api.get("/services"), SERVICE_COLUMNS, out, "No services yet: `apimcp import <file or URL>`.")


@service_app.command("show")
def show_service(
    service: Annotated[str, typer.Argument(help="id, name or name:version")], out: OutputOption = Format.table
) -> None:
    """A service, its operations and its artifacts."""
    api = client()
    with reporting():
        detail = api.get(f"/services/{find_service(api, service)['id']}")
        detail["artifacts"] = api.get(f"/services/{detail['id']}/artifacts")
    if out is Format.json:
        output.record(detail, out)
        return
    output.record(detail, out, title=f"Service {detail['name']} {detail['version']}")
    operations = [("TOOL", "tool_name"), ("OPERATION", "signature"), ("TITLE", "title")]
    output.rows(detail["operations"], operations, out, "No operations.")
    if detail["artifacts"]:
        output.rows(detail["artifacts"], ARTIFACT_COLUMNS, out, "")


def _artifact_kind(artifact: dict[str, Any]) -> str:
    if artifact["role"] == "main":
        return "description"
    return str(artifact.get("kind") or "unchecked (not served: attach a valid file)")


ARTIFACT_COLUMNS: list[output.Column] = [
    ("ARTIFACT", "name"),
    ("KIND", _artifact_kind),
    ("DECLARES", "capabilities"),
]
"""The content's SHA-256 is in `-o json` (a table cell would wrap it)."""


def detach_command(
    service: Annotated[str, typer.Argument(help="The service: id, name or name:version.")],
    artifact: Annotated[str, typer.Argument(help="The attached artifact: id or name.")],
    out: OutputOption = Format.table,
) -> None:
    """Detach an artifact from a service; plans that selected it no longer do (and say so)."""
    api = client()
    with reporting():
        found = find_service(api, service)
        attached = [a for a in api.get(f"/services/{found['id']}/artifacts") if artifact in (a["id"], a["name"])]
        if not attached:
            fail(f"{found['name']} {found['version']} has no artifact {artifact!r} (`apimcp service show` lists them)")
        report: dict[str, Any] = api.delete(f"/artifacts/{attached[0]['id']}")
    if out is Format.json:
        output.record(report, out)
        return
    typer.echo(f"Detached {report['artifact_name']} from {found['name']} {found['version']}")
    for plan in report["impacted_plans"]:
        after = (
            "it selected nothing else, so it now serves all artifacts"
            if plan["falls_back_to_all"]
            else ("it keeps its other artifacts")
        )
        typer.echo(f"  plan {plan['name']} ({plan['id']}) no longer selects it: {after}")


@service_app.command("delete")
def delete_service(service: Annotated[str, typer.Argument(help="id, name or name:version")]) -> None:
    """Delete a service with its artifacts, plans and expositions."""
    api = client()
    with reporting():
        found = find_service(api, service)
        api.delete(f"/services/{found['id']}")
    typer.echo(f"Deleted service {found['name']} {found['version']}")
