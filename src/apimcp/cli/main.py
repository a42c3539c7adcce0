"""`apimcp`: the command line entry point.

Commands that run processes (`serve`, `control-plane`, `gateway`, `demo`) and
commands that manage a control plane (`login`, `import`, `plan`, `expo`, ...)
live in their own modules; this one assembles them.
"""

from __future__ import annotations

import os

import typer

from apimcp import __version__
from apimcp.cli import (
    access_commands,
    apply_command,
    approval_commands,
    audit_commands,
    catalog_commands,
    discovery_commands,
    export_command,
    exposure_commands,
    gateway_key_commands,
    history_commands,
    mcp_commands,
    mcp_listing,
    people_commands,
    policy_commands,
    quota_commands,
    server_commands,
    stdio_command,
    template_commands,
    upstream_commands,
)
from apimcp.cli.readable_help import ReadableGroup

app = typer.Typer(
    name="apimcp",
    help="Expose the APIs you already have (OpenAPI, GraphQL, gRPC) as MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=ReadableGroup,
)


@app.callback()
def _root() -> None:
    """Expose the APIs you already have as MCP servers."""


@app.command()
def version() -> None:
    """Print the apimcp version."""
    typer.echo(__version__)


app.command()(server_commands.serve)
app.command("control-plane")(server_commands.control_plane)
app.command()(server_commands.demo)
app.command("demo-api")(server_commands.demo_api)
gateway_app = typer.Typer(help="Run a gateway that follows a control plane, or list gateways.")
gateway_app.callback(invoke_without_command=True)(server_commands.gateway)
gateway_app.command("list")(exposure_commands.list_gateways)
app.add_typer(gateway_app, name="gateway")

app.command()(access_commands.login)
app.command()(access_commands.logout)
app.command("switch-org")(people_commands.switch_org)
app.command()(people_commands.whoami)
app.command()(people_commands.join)
app.add_typer(people_commands.members_app, name="members")
app.command("import")(catalog_commands.import_command)
app.command("attach")(catalog_commands.attach_command)
app.command("detach")(catalog_commands.detach_command)
app.command()(apply_command.apply)
app.command()(export_command.export)
app.command()(audit_commands.audit)
app.command()(history_commands.history)
app.command()(history_commands.diff)
app.command()(history_commands.rollback)
for name, command in (
    ("changes", upstream_commands.changes),
    ("accept", upstream_commands.accept),
    ("reject", upstream_commands.reject),
    ("refresh", upstream_commands.refresh),
):
    catalog_commands.service_app.command(name)(command)
app.add_typer(catalog_commands.service_app, name="service")
app.add_typer(exposure_commands.plan_app, name="plan")
app.add_typer(exposure_commands.expo_app, name="expo")
app.add_typer(exposure_commands.group_app, name="gateway-group")
app.add_typer(access_commands.secret_app, name="secret")
app.add_typer(access_commands.token_app, name="token")
app.add_typer(gateway_key_commands.gateway_key_app, name="gateway-key")
app.add_typer(access_commands.org_app, name="organization")
app.add_typer(discovery_commands.discovery_app, name="discovery")
app.add_typer(policy_commands.policy_app, name="policy")
app.add_typer(quota_commands.quotas_app, name="quotas")
app.add_typer(approval_commands.approvals_app, name="approvals")
app.add_typer(template_commands.template_app, name="template")
app.command()(mcp_commands.tools)
app.command()(mcp_commands.call)
app.command()(stdio_command.stdio)
app.command()(mcp_listing.prompts)
app.command()(mcp_listing.prompt)
app.command()(mcp_listing.resources)
app.command()(mcp_listing.read)


def main() -> None:
    # gRPC's core logs at INFO (a line per GOAWAY when a backend restarts); keep it to errors unless asked.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    app()
