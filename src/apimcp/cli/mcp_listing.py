"""`apimcp prompts`, `prompt`, `resources` and `read`: an endpoint's prompts and resources from the terminal.

The same one-request-per-command 2026-07-28 client as `apimcp tools` and `apimcp call`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.cli.mcp_commands import ApiKey, Endpoint, request
from apimcp.cli.output import Format, OutputOption


def _all(endpoint: str, method: str, key: str, api_key: str | None) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = request(endpoint, method, {"cursor": cursor} if cursor else {}, api_key)
        listed.extend(page[key])
        cursor = page.get("nextCursor")
        if not cursor:
            return listed


def prompts(endpoint: Endpoint, api_key: ApiKey = None, out: OutputOption = Format.table) -> None:
    """List the prompts an MCP endpoint offers, with their arguments (* = required)."""
    listed = _all(endpoint, "prompts/list", "prompts", api_key)
    rows = [
        {
            "name": p["name"],
            "arguments": ", ".join(a["name"] + ("*" if a.get("required") else "") for a in p.get("arguments", [])),
            "description": output.first_line(p.get("description")),
        }
        for p in listed
    ]
    columns: list[output.Column] = [("PROMPT", "name"), ("ARGUMENTS", "arguments"), ("DESCRIPTION", "description")]
    output.rows(rows if out is Format.table else listed, columns, out, "No prompts.")


def prompt(
    endpoint: Endpoint,
    name: Annotated[str, typer.Argument(help="The prompt to get.")],
    arg: Annotated[list[str], typer.Option("--arg", help="An argument NAME=VALUE.")] = [],
    api_key: ApiKey = None,
    out: OutputOption = Format.table,
) -> None:
    """Get a prompt with its arguments and print its messages."""
    values: dict[str, str] = {}
    for item in arg:
        key, sep, value = item.partition("=")
        if not sep:
            fail(f"--arg expects NAME=VALUE, got {item!r}", EXIT_USAGE)
        values[key] = value
    result = request(endpoint, "prompts/get", {"name": name, "arguments": values}, api_key)
    if out is Format.json:
        typer.echo(output.json_text(result))
        return
    for message in result.get("messages", []):
        content = message.get("content", {})
        typer.echo(f"[{message.get('role')}] {content.get('text', output.json_text(content, indent=None))}")


def resources(endpoint: Endpoint, api_key: ApiKey = None, out: OutputOption = Format.table) -> None:
    """List the resources and resource templates an MCP endpoint offers."""
    listed = _all(endpoint, "resources/list", "resources", api_key)
    templates = _all(endpoint, "resources/templates/list", "resourceTemplates", api_key)
    if out is Format.json:
        typer.echo(output.json_text({"resources": listed, "resourceTemplates": templates}))
        return
    rows = [{"uri": r["uri"], "name": r["name"], "type": r.get("mimeType") or ""} for r in listed]
    rows += [{"uri": t["uriTemplate"], "name": t["name"], "type": t.get("mimeType") or ""} for t in templates]
    output.rows(rows, [("URI", "uri"), ("NAME", "name"), ("TYPE", "type")], out, "No resources.")


def read(
    endpoint: Endpoint,
    uri: Annotated[str, typer.Argument(help="The resource's URI (or one a template matches).")],
    api_key: ApiKey = None,
    out: OutputOption = Format.table,
) -> None:
    """Read a resource and print its contents (binary contents as base64)."""
    result = request(endpoint, "resources/read", {"uri": uri}, api_key)
    if out is Format.json:
        typer.echo(output.json_text(result))
        return
    for contents in result.get("contents", []):
        typer.echo(contents["text"] if "text" in contents else contents.get("blob", ""))
