"""`apimcp tools` and `apimcp call`: a quick MCP client, to check an endpoint from the terminal.

It speaks MCP 2026-07-28 (stateless: every request carries its protocol version
and client info), so one HTTP request per command is enough.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Annotated, Any

import typer

from apimcp import __version__
from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.cli.output import Format, OutputOption

VERSION = "2026-07-28"
Endpoint = Annotated[str, typer.Argument(help="The MCP endpoint, e.g. http://localhost:8080/mcp/default/books.")]
ApiKey = Annotated[str | None, typer.Option(envvar="APIMCP_API_KEY", help="The plan's inbound API key, if it has one.")]


def request(endpoint: str, method: str, params: dict[str, Any], api_key: str | None = None) -> dict[str, Any]:
    """One 2026-07-28 request; the JSON-RPC result, or a clear failure."""
    params = {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "apimcp-cli", "version": __version__},
        },
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    http = urllib.request.Request(endpoint, data=body, method="POST")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    named = params.get("uri") if method == "resources/read" else params.get("name")
    if named is not None:
        headers["Mcp-Name"] = str(named)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    for name, value in headers.items():
        http.add_header(name, value)
    try:
        with urllib.request.urlopen(http, timeout=120) as response:
            media = response.headers.get_content_type()
            payload = response.read().decode()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:500]
        fail(f"{endpoint} answered HTTP {exc.code}: {detail}")
    except (urllib.error.URLError, OSError) as exc:
        fail(f"cannot reach {endpoint}: {getattr(exc, 'reason', exc)}")
    message = _last_event(payload) if media == "text/event-stream" else json.loads(payload)
    if "error" in message:
        fail(f"{method} failed: {message['error'].get('message')} (code {message['error'].get('code')})")
    result: dict[str, Any] = message["result"]
    return result


def _last_event(stream: str) -> dict[str, Any]:
    """The response in an SSE stream (notifications before it are skipped)."""
    found: dict[str, Any] = {}
    for block in stream.split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.splitlines() if line.startswith("data:"))
        if data:
            message = json.loads(data)
            if "result" in message or "error" in message:
                found = message
    if not found:
        fail("the stream ended without a response")
    return found


def tools(endpoint: Endpoint, api_key: ApiKey = None, out: OutputOption = Format.table) -> None:
    """List the tools an MCP endpoint offers."""
    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = request(endpoint, "tools/list", {"cursor": cursor} if cursor else {}, api_key)
        listed.extend(page["tools"])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    rows = [{"name": t["name"], "description": (t.get("description") or "").split("\n")[0][:100]} for t in listed]
    output.rows(
        rows if out is Format.table else listed, [("TOOL", "name"), ("DESCRIPTION", "description")], out, "No tools."
    )


def _argument(value: str, schema: Any) -> Any:
    """A command-line value as the tool expects it: text for string parameters, else JSON when it parses."""
    types = schema.get("type") if isinstance(schema, dict) else None
    if types == "string" or (isinstance(types, list) and "string" in types and len(types) == 1):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _input_schema(endpoint: str, tool: str, api_key: str | None) -> dict[str, Any]:
    cursor: str | None = None
    while True:
        page = request(endpoint, "tools/list", {"cursor": cursor} if cursor else {}, api_key)
        for listed in page["tools"]:
            if listed["name"] == tool:
                schema: dict[str, Any] = listed.get("inputSchema") or {}
                return schema
        cursor = page.get("nextCursor")
        if not cursor:
            fail(f"{endpoint} has no tool {tool!r} (`apimcp tools {endpoint}` lists them)")


def call(
    endpoint: Endpoint,
    tool: Annotated[str, typer.Argument(help="The tool to call.")],
    arg: Annotated[
        list[str], typer.Option("--arg", help="An argument NAME=VALUE (read as JSON unless the parameter is a string).")
    ] = [],
    arguments: Annotated[str | None, typer.Option("--json", help="All arguments as one JSON object.")] = None,
    api_key: ApiKey = None,
    out: OutputOption = Format.table,
) -> None:
    """Call a tool and print its result."""
    values: dict[str, Any] = {}
    if arguments is not None:
        try:
            values = json.loads(arguments)
        except ValueError as exc:
            fail(f"--json is not valid JSON: {exc}", EXIT_USAGE)
        if not isinstance(values, dict):
            fail("--json must be a JSON object", EXIT_USAGE)
    properties = _input_schema(endpoint, tool, api_key).get("properties", {}) if arg else {}
    for item in arg:
        key, sep, value = item.partition("=")
        if not sep:
            fail(f"--arg expects NAME=VALUE, got {item!r}", EXIT_USAGE)
        values[key] = _argument(value, properties.get(key))
    result = request(endpoint, "tools/call", {"name": tool, "arguments": values}, api_key)
    if out is Format.json:
        typer.echo(json.dumps(result, indent=2))
    elif "structuredContent" in result:
        typer.echo(json.dumps(result["structuredContent"], indent=2))
    else:
        for block in result.get("content", []):
            typer.echo(block.get("text", json.dumps(block)))
    if result.get("isError"):
        raise typer.Exit(code=1)
