"""`apimcp plan`, `expo`, `gateway-group` and `gateway list`: what is exposed, and where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.client import ControlPlaneClient
from apimcp.cli.common import EXIT_USAGE, client, fail, find, find_service, pairs, reporting
from apimcp.cli.identity_options import (
    Audience,
    AudienceCheck,
    Audit,
    HeaderPolicy,
    IntrospectionSecret,
    Issuer,
    JwksUri,
    Scope,
    ToolScope,
    identity_values,
)
from apimcp.cli.output import Format, OutputOption
from apimcp.cli.rate_limit_options import CallerRateLimitOption, RateLimitOption, rate_limit_values
from apimcp.cli.task_options import CodeModeOption, TasksOption, ToolSearchOption, TrustChangesOption, task_values

plan_app = typer.Typer(
    help="Plans: which operations of a service, which backend, which security.", no_args_is_help=True
)
expo_app = typer.Typer(
    help="Expositions: a plan published on a gateway group as an MCP endpoint.", no_args_is_help=True
)
group_app = typer.Typer(help="Gateway groups: which gateways serve which expositions.", no_args_is_help=True)

PLAN_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("SERVICE", "service"),
    ("BACKEND", "backend_endpoint"),
    ("INCLUDE", "include"),
    ("EXCLUDE", "exclude"),
    ("INBOUND", "inbound_mode"),
]
EXPO_COLUMNS: list[output.Column] = [
    ("ID", "id"),
    ("NAME", "name"),
    ("PLAN", "plan"),
    ("GROUP", "group"),
    ("ENDPOINT", lambda e: e["endpoints"][0]),
]
GROUP_COLUMNS: list[output.Column] = [("ID", "id"), ("NAME", "name"), ("LABELS", "labels")]
GATEWAY_COLUMNS: list[output.Column] = [
    ("NAME", "name"),
    ("LABELS", "labels"),
    ("VERSION", "version"),
    ("STARTED", "started_at"),
    ("LAST SEEN", "last_seen"),
]

Backend = Annotated[str | None, typer.Option("--backend", help="The API's base URL (default: the description's).")]
TimeoutMs = Annotated[int | None, typer.Option("--timeout-ms", help="Backend timeout in milliseconds.")]
Include = Annotated[
    list[str],
    typer.Option(
        help="Expose only these operations (tool name, operationId, 'GET /path', "
        "tag:x; * wildcards). Repeat for several."
    ),
]
Exclude = Annotated[list[str], typer.Option(help="Do not expose these operations (same patterns).")]
ReadOnlyTool = Annotated[
    list[str],
    typer.Option(
        help="Hold exactly the tools these patterns select read-only, every other one not, whatever the description "
        "or the MCP server claims. Repeat for several; '' makes none read-only."
    ),
]
ReadOnlyClaimed = Annotated[
    bool,
    typer.Option(help="Drop --read-only-tool: the description's and the MCP server's claims decide again."),
]
Secret = Annotated[
    list[str],
    typer.Option(
        help="Backend secret (id or name). Repeat for calls that need several at once (e.g. an API key and a "
        "client id); the list replaces the plan's. '' removes them all."
    ),
]
TlsSecret = Annotated[
    str | None, typer.Option(help="A secret of kind tls (CA, client certificate) for the backend; '' removes it.")
]
Inbound = Annotated[
    str | None,
    typer.Option(help="Client authentication: none, api_key (a key is shown once), or oauth (with --issuer...)."),
]
Cache = Annotated[list[str], typer.Option(help="Cache hint METHOD=TTL_MS[:public|private], e.g. tools/list=60000.")]
Prefix = Annotated[str | None, typer.Option("--tool-prefix", help="Prefix of every tool name of this plan.")]
Artifacts = Annotated[
    list[str], typer.Option("--artifact", help="Attached artifact to use (name). Repeat for several.")
]
Schemas = Annotated[
    bool | None, typer.Option("--output-schemas/--no-output-schemas", help="Publish tool output schemas.")
]
Description = Annotated[str | None, typer.Option(help="What the plan is for.")]


def _cache(values: list[str]) -> dict[str, dict[str, Any]]:
    hints = {}
    for item in values:
        method, _, raw = item.partition("=")
        ttl, _, scope = raw.partition(":")
        if not method or not ttl.isdigit() or scope not in ("", "public", "private"):
            fail(f"--cache expects METHOD=TTL_MS[:public|private], got {item!r}", EXIT_USAGE)
        hints[method] = {"ttl_ms": int(ttl), "scope": scope or "private"}
    return hints


def _plan_values(api: ControlPlaneClient, given: Mapping[str, Any]) -> dict[str, Any]:
    """The plan fields given on the command line (only those: an update changes nothing else). `given` holds
    the plan options of `plan create` and `plan update` by parameter name (both commands pass their locals)."""
    scalars = (
        ("backend_endpoint", "backend"),
        ("backend_timeout_ms", "timeout_ms"),
        ("inbound_mode", "inbound"),
        ("tool_prefix", "tool_prefix"),
        ("output_schemas", "output_schemas"),
        ("description", "description"),
    )
    values: dict[str, Any] = {key: given[option] for key, option in scalars if given[option] is not None}
    for key, option in (("include", "include"), ("exclude", "exclude"), ("artifacts", "artifact")):
        if given[option]:
            values[key] = [] if given[option] == [""] else given[option]
    if given["read_only_claimed"]:
        values["read_only_tools"] = None
    elif given["read_only_tool"]:
        values["read_only_tools"] = [] if given["read_only_tool"] == [""] else given["read_only_tool"]
    if given["cache"]:
        values["cache"] = {} if given["cache"] == [""] else _cache(given["cache"])
    if given["secret"]:
        chosen = [] if given["secret"] == [""] else given["secret"]
        values["secret_ids"] = [find(api, "/secrets", secret, "secret")["id"] for secret in chosen]
    if given["tls_secret"] is not None:
        tls = given["tls_secret"]
        values["tls_secret_id"] = find(api, "/secrets", tls, "secret")["id"] if tls else None
    return values


def _with_names(api: ControlPlaneClient, plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    services = {s["id"]: f"{s['name']} {s['version']}" for s in api.get("/services")}
    return [{**plan, "service": services.get(plan["service_id"], plan["service_id"])} for plan in plans]


def _show_plan(plan: dict[str, Any], out: Format, title: str) -> None:
    key = plan.pop("api_key", None)
    output.record({**plan, "api_key": key} if out is Format.json and key else plan, out, title=title)
    if key and out is Format.table:
        typer.echo(f"Inbound API key (shown once; clients send it as 'Authorization: Bearer <key>'): {key}")


@plan_app.command("create")
def create_plan(
    service: Annotated[str, typer.Argument(help="The service: id, name or name:version.")],
    name: Annotated[str, typer.Option(help="Plan name (unique for the service).")],
    backend: Backend = None,
    timeout_ms: TimeoutMs = None,
    include: Include = [],
    exclude: Exclude = [],
    read_only_tool: ReadOnlyTool = [],
    read_only_claimed: ReadOnlyClaimed = False,
    secret: Secret = [],
    tls_secret: TlsSecret = None,
    inbound: Inbound = None,
    cache: Cache = [],
    tool_prefix: Prefix = None,
    artifact: Artifacts = [],
    output_schemas: Schemas = None,
    description: Description = None,
    issuer: Issuer = [],
    jwks_uri: JwksUri = None,
    audience: Audience = [],
    audience_check: AudienceCheck = None,
    scope: Scope = [],
    tool_scope: ToolScope = [],
    introspection_secret: IntrospectionSecret = None,
    header_policy: HeaderPolicy = None,
    audit: Audit = None,
    rate_limit: RateLimitOption = None,
    caller_rate_limit: CallerRateLimitOption = None,
    tasks: TasksOption = None,
    tool_search: ToolSearchOption = None,
    code_mode: CodeModeOption = None,
    trust_changes: TrustChangesOption = None,
    template: Annotated[
        str | None,
        typer.Option(help="A template (id or name) whose settings the plan starts with; the options given here win."),
    ] = None,
    out: OutputOption = Format.table,
) -> None:
    """Create a plan for a service."""
    api = client()
    with reporting():
        found = find_service(api, service)
        given = locals()
        values = {
            **_plan_values(api, given),
            **identity_values(api, given),
            **rate_limit_values(given),
            **task_values(given),
        }
        if template is not None:
            values["template"] = template
        plan = api.post("/plans", {"name": name, "service_id": found["id"], **values})
    _show_plan(plan, out, f"Created plan {plan['name']} ({plan['id']})")


@plan_app.command("list")
def list_plans(
    service: Annotated[str | None, typer.Option(help="Only this service's plans.")] = None,
    out: OutputOption = Format.table,
) -> None:
    """The organization's plans."""
    api = client()
    with reporting():
        service_id = find_service(api, service)["id"] if service else None
        plans = _with_names(api, api.get("/plans", service_id=service_id))
    output.rows(plans, PLAN_COLUMNS, out, "No plans yet: `apimcp plan create <service> --name <name>`.")


@plan_app.command("show")
def show_plan(plan: Annotated[str, typer.Argument(help="id or name")], out: OutputOption = Format.table) -> None:
    """A plan: its selection, backend, secrets, inbound security and hints."""
    api = client()
    with reporting():
        (found,) = _with_names(api, [find(api, "/plans", plan, "plan")])
    _show_plan(found, out, f"Plan {found['name']}")


@plan_app.command("update")
def update_plan(
    plan: Annotated[str, typer.Argument(help="id or name")],
    backend: Backend = None,
    timeout_ms: TimeoutMs = None,
    include: Include = [],
    exclude: Exclude = [],
    read_only_tool: ReadOnlyTool = [],
    read_only_claimed: ReadOnlyClaimed = False,
    secret: Secret = [],
    tls_secret: TlsSecret = None,
    inbound: Inbound = None,
    cache: Cache = [],
    tool_prefix: Prefix = None,
    artifact: Artifacts = [],
    output_schemas: Schemas = None,
    description: Description = None,
    issuer: Issuer = [],
    jwks_uri: JwksUri = None,
    audience: Audience = [],
    audience_check: AudienceCheck = None,
    scope: Scope = [],
    tool_scope: ToolScope = [],
    introspection_secret: IntrospectionSecret = None,
    header_policy: HeaderPolicy = None,
    audit: Audit = None,
    rate_limit: RateLimitOption = None,
    caller_rate_limit: CallerRateLimitOption = None,
    tasks: TasksOption = None,
    tool_search: ToolSearchOption = None,
    code_mode: CodeModeOption = None,
    trust_changes: TrustChangesOption = None,
    out: OutputOption = Format.table,
) -> None:
    """Change a plan; gateways serve the change within a second. Give '' to clear a list (--include '')."""
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        given = locals()
        values = {
            **_plan_values(api, given),
            **identity_values(api, given, found),
            **rate_limit_values(given, found),
            **task_values(given),
        }
        if not values:
            fail("nothing to change: give at least one option (see --help)", EXIT_USAGE)
        updated = api.patch(f"/plans/{found['id']}", values)
    _show_plan(updated, out, f"Updated plan {updated['name']}")


@plan_app.command("duplicate")
def duplicate_plan(
    plan: Annotated[str, typer.Argument(help="id or name")],
    name: Annotated[str, typer.Option(help="Name of the copy.")],
    out: OutputOption = Format.table,
) -> None:
    """Copy a plan under a new name (an inbound API key is not copied: the copy gets its own)."""
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        copy = api.post(f"/plans/{found['id']}/duplicate", {"name": name})
    _show_plan(copy, out, f"Created plan {copy['name']} ({copy['id']}) from {found['name']}")


@plan_app.command("api-key")
def renew_api_key(plan: Annotated[str, typer.Argument(help="id or name")], out: OutputOption = Format.table) -> None:
    """Issue a new inbound API key for the plan (the previous one stops working)."""
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        updated = api.post(f"/plans/{found['id']}/api-key")
    _show_plan(updated, out, f"New API key for plan {updated['name']}")


@plan_app.command("delete")
def delete_plan(plan: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Delete a plan (and its expositions)."""
    api = client()
    with reporting():
        found = find(api, "/plans", plan, "plan")
        api.delete(f"/plans/{found['id']}")
    typer.echo(f"Deleted plan {found['name']}")


# --- expositions ---------------------------------------------------------------------------------


def _expo_names(api: ControlPlaneClient, expositions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plans = {p["id"]: p["name"] for p in api.get("/plans")}
    groups = {g["id"]: g["name"] for g in api.get("/gateway-groups")}
    return [{**e, "plan": plans.get(e["plan_id"]), "group": groups.get(e["group_id"])} for e in expositions]


def _show_expo(api: ControlPlaneClient, exposition: dict[str, Any], out: Format, title: str) -> None:
    output.record(exposition, out, title=title)
    if out is Format.table:
        typer.echo("MCP endpoints:")
        for endpoint in exposition["endpoints"]:
            typer.echo(f"  {api.url}{endpoint}")


Group = Annotated[str | None, typer.Option(help="Gateway group (id or name; default: 'default').")]


@expo_app.command("create")
def create_expo(
    plan: Annotated[str, typer.Argument(help="The plan to expose: id or name.")],
    name: Annotated[str | None, typer.Option(help="Exposition name, unique in the organization.")] = None,
    group: Group = None,
    out: OutputOption = Format.table,
) -> None:
    """Expose a plan on a gateway group."""
    api = client()
    with reporting():
        body = {"plan_id": find(api, "/plans", plan, "plan")["id"], "name": name}
        if group:
            body["group_id"] = find(api, "/gateway-groups", group, "gateway group")["id"]
        exposition = api.post("/expositions", body)
    _show_expo(api, exposition, out, f"Created exposition {exposition['name'] or exposition['id']}")


@expo_app.command("list")
def list_expos(out: OutputOption = Format.table) -> None:
    """The organization's expositions and their endpoints."""
    api = client()
    with reporting():
        expositions = _expo_names(api, api.get("/expositions"))
    output.rows(expositions, EXPO_COLUMNS, out, "No expositions yet: `apimcp expo create <plan>`.")


@expo_app.command("show")
def show_expo(exposition: Annotated[str, typer.Argument(help="id or name")], out: OutputOption = Format.table) -> None:
    """An exposition: its plan, gateway group and MCP endpoints."""
    api = client()
    with reporting():
        (found,) = _expo_names(api, [find(api, "/expositions", exposition, "exposition")])
    _show_expo(api, found, out, f"Exposition {found['name'] or found['id']}")


@expo_app.command("update")
def update_expo(
    exposition: Annotated[str, typer.Argument(help="id or name")],
    plan: Annotated[str | None, typer.Option(help="Expose another plan (id or name).")] = None,
    name: Annotated[str | None, typer.Option(help="A new name ('' removes the name).")] = None,
    group: Group = None,
    out: OutputOption = Format.table,
) -> None:
    """Change what an exposition serves, where, or its name."""
    api = client()
    with reporting():
        found = find(api, "/expositions", exposition, "exposition")
        body: dict[str, Any] = {}
        if plan:
            body["plan_id"] = find(api, "/plans", plan, "plan")["id"]
        if group:
            body["group_id"] = find(api, "/gateway-groups", group, "gateway group")["id"]
        if name is not None:
            body["name"] = name or None
        if not body:
            fail("nothing to change: give --plan, --group or --name", EXIT_USAGE)
        updated = api.patch(f"/expositions/{found['id']}", body)
    _show_expo(api, updated, out, f"Updated exposition {updated['name'] or updated['id']}")


@expo_app.command("duplicate")
def duplicate_expo(
    exposition: Annotated[str, typer.Argument(help="id or name")],
    name: Annotated[str | None, typer.Option(help="Name of the copy.")] = None,
    out: OutputOption = Format.table,
) -> None:
    """Expose the same plan once more on the same group (e.g. under another name)."""
    api = client()
    with reporting():
        found = find(api, "/expositions", exposition, "exposition")
        copy = api.post(f"/expositions/{found['id']}/duplicate", {"name": name})
    _show_expo(api, copy, out, f"Created exposition {copy['name'] or copy['id']}")


@expo_app.command("delete")
def delete_expo(exposition: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Stop exposing (gateways drop the endpoint within a second)."""
    api = client()
    with reporting():
        found = find(api, "/expositions", exposition, "exposition")
        api.delete(f"/expositions/{found['id']}")
    typer.echo(f"Deleted exposition {found['name'] or found['id']}")


# --- gateway groups and gateways -------------------------------------------------------------------

Labels = Annotated[list[str], typer.Option("--label", help="A label NAME=VALUE. Repeat for several.")]


@group_app.command("create")
def create_group(
    name: Annotated[str, typer.Argument(help="Group name.")],
    label: Labels = [],
    out: OutputOption = Format.table,
) -> None:
    """Create a gateway group; gateways whose labels all appear in the group's labels serve it."""
    api = client()
    with reporting():
        group = api.post("/gateway-groups", {"name": name, "labels": pairs(label, "--label")})
    output.record(group, out, title=f"Created gateway group {group['name']}")


@group_app.command("list")
def list_groups(out: OutputOption = Format.table) -> None:
    """The organization's gateway groups and their labels."""
    api = client()
    with reporting():
        output.rows(api.get("/gateway-groups"), GROUP_COLUMNS, out, "No gateway groups.")


@group_app.command("update")
def update_group(
    group: Annotated[str, typer.Argument(help="id or name")],
    label: Labels = [],
    out: OutputOption = Format.table,
) -> None:
    """Replace a group's labels."""
    api = client()
    with reporting():
        found = find(api, "/gateway-groups", group, "gateway group")
        updated = api.patch(f"/gateway-groups/{found['id']}", {"labels": pairs(label, "--label")})
    output.record(updated, out, title=f"Updated gateway group {updated['name']}")


@group_app.command("delete")
def delete_group(group: Annotated[str, typer.Argument(help="id or name")]) -> None:
    """Delete a gateway group (refused while expositions are published on it)."""
    api = client()
    with reporting():
        found = find(api, "/gateway-groups", group, "gateway group")
        api.delete(f"/gateway-groups/{found['id']}")
    typer.echo(f"Deleted gateway group {found['name']}")


def list_gateways(out: OutputOption = Format.table) -> None:
    """The gateways that have synced with the control plane, and when they were last seen."""
    api = client()
    with reporting():
        output.rows(api.get("/gateways"), GATEWAY_COLUMNS, out, "No gateway has connected yet.")
