"""`apimcp service changes | accept | reject | refresh`: what an MCP server changed in its tools, held until an
admin accepts it (`control.domain.upstream_changes`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import client, fail, find, find_service, reporting
from apimcp.cli.output import Format, OutputOption

ServiceArgument = Annotated[str, typer.Argument(help="The MCP server's service: id, name or name:version.")]


def changes(service: ServiceArgument, out: OutputOption = Format.table) -> None:
    """What the MCP server changed in its tools since it was imported: held, not served, until accepted."""
    api = client()
    with reporting():
        found = find_service(api, service)
        held: dict[str, Any] = api.get(f"/services/{found['id']}/changes")
    if out is Format.json:
        output.record(held, out)
        return
    if not held["changes"]:
        typer.echo(f"{found['name']} {found['version']}: nothing held, the tools served are the server's own")
        return
    typer.echo(f"{found['name']} {found['version']}: {len(held['changes'])} changes held (not served):")
    for change in held["changes"]:
        what = change["name"] if change["kind"] == "tool" else f"{change['kind']} {change['name']}"
        typer.echo(f"\n{change['change'].upper()} {what}")
        for flag in change["flags"]:
            typer.echo(f"  flagged: it holds {flag}")
        typer.echo(change["diff"])
    typer.echo(f"\nServe them: apimcp service accept {service}; keep what is served: apimcp service reject {service}")


def accept(service: ServiceArgument) -> None:
    """Serve the MCP server's tools as it lists them now (admin token)."""
    api = client()
    with reporting():
        found = find_service(api, service)
        accepted: dict[str, Any] = api.post(f"/services/{found['id']}/changes/accept")
    typer.echo(f"Accepted: {accepted['name']} {accepted['version']} serves {accepted['operation_count']} tools")


def reject(service: ServiceArgument) -> None:
    """Keep serving the tools as they were (admin token): the held changes are dropped."""
    api = client()
    with reporting():
        found = find_service(api, service)
        api.delete(f"/services/{found['id']}/changes")
    typer.echo(f"Rejected: {found['name']} {found['version']} keeps the tools it served")


def refresh(
    service: ServiceArgument,
    secret: Annotated[
        str | None, typer.Option(help="A secret (id or name) the control plane sends to read the server.")
    ] = None,
) -> None:
    """Read the MCP server's tools again: what changed is held until an admin accepts it."""
    api = client()
    with reporting():
        found = find_service(api, service)
        if found["kind"] != "mcp":
            fail(f"{found['name']} {found['version']} is a {found['kind']} service: import its description again")
        main = next((a for a in api.get(f"/services/{found['id']}/artifacts") if a["role"] == "main"), None)
        if main is None or not main.get("source"):
            fail(f"{found['name']} {found['version']} does not say where its server is: import it again by URL")
        body: dict[str, Any] = {
            "url": main["source"],
            "kind": "mcp",
            "name": found["name"],
            "version": found["version"],
        }
        if secret:
            body["secret_id"] = find(api, "/secrets", secret, "secret")["id"]
        read: dict[str, Any] = api.post("/services", body)
    held = read.get("held") or []
    if held:
        typer.echo(f"{len(held)} changes held until an admin accepts them: apimcp service changes {service}")
    else:
        typer.echo(f"{found['name']} {found['version']}: the server's tools are those served")
