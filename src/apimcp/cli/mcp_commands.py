"""`apimcp tools` and `apimcp call`: a quick MCP client, to check an endpoint from the terminal.

It speaks MCP 2026-07-28 (stateless: every request carries its protocol version
and client info), so one HTTP request per command is enough.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer

from apimcp import __version__
from apimcp.catalog.naming import snake_case
from apimcp.cli import output
from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.cli.output import Format, OutputOption

VERSION = "2026-07-28"
Endpoint = Annotated[str, typer.Argument(help="The MCP endpoint, e.g. http://localhost:8080/mcp/default/books.")]
ApiKey = Annotated[str | None, typer.Option(envvar="APIMCP_API_KEY", help="The plan's inbound API key, if it has one.")]


Explain = Callable[[dict[str, Any]], str | None]
"""What a JSON-RPC error means for the command that got it (None: its message says enough)."""


def request(
    endpoint: str, method: str, params: dict[str, Any], api_key: str | None = None, explain: Explain | None = None
) -> dict[str, Any]:
    """One 2026-07-28 request; the JSON-RPC result, or a clear failure (an error, whether in a 200 or in the body
    of an HTTP error status, as 2026-07-28 answers invalid params, is told by `explain` when it knows better)."""
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
        detail = exc.read(MAX_ERROR_BYTES).decode(errors="replace")
        error = _json_rpc_error(detail)
        if error is None:
            fail(f"{endpoint} answered HTTP {exc.code}: {detail[:500]}")
        _failed(method, error, explain)
    except (urllib.error.URLError, OSError) as exc:
        fail(f"cannot reach {endpoint}: {getattr(exc, 'reason', exc)}")
    message = _last_event(payload) if media == "text/event-stream" else json.loads(payload)
    if "error" in message:
        _failed(method, message["error"], explain)
    result: dict[str, Any] = message["result"]
    return result


MAX_ERROR_BYTES = 64 * 1024


def _json_rpc_error(body: str) -> dict[str, Any] | None:
    """The JSON-RPC error an HTTP error status carries, if its body is one."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    return error if isinstance(error, dict) else None


def _failed(method: str, error: dict[str, Any], explain: Explain | None) -> NoReturn:
    fail((explain(error) if explain is not None else None) or f"{method} failed: {error.get('message')} "
         f"(code {error.get('code')})")  # fmt: skip


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
    listed = _listed_tools(endpoint, api_key)
    rows = [{"name": t["name"], "description": output.first_line(t.get("description"))} for t in listed]
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


def _listed_tools(endpoint: str, api_key: str | None) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = request(endpoint, "tools/list", {"cursor": cursor} if cursor else {}, api_key)
        listed.extend(page["tools"])
        cursor = page.get("nextCursor")
        if not cursor:
            return listed


def _no_such_tool(endpoint: str, tool: str, listed: list[dict[str, Any]]) -> str:
    """The hint for a tool name the endpoint does not know, with the tool it most likely meant: tools are named
    in snake_case, so an operationId (`getPetById`) names `get_pet_by_id` (or a prefixed `pets_get_pet_by_id`)."""
    wanted = snake_case(tool)
    likely = [t["name"] for t in listed if t["name"] == wanted or t["name"].endswith(f"_{wanted}")]
    meant = f"; did you mean {' or '.join(likely[:3])}?" if likely else ""
    return f"{endpoint} has no tool {tool!r} (`apimcp tools {endpoint}` lists them{meant})"


def _input_schema(endpoint: str, tool: str, api_key: str | None) -> dict[str, Any]:
    listed = _listed_tools(endpoint, api_key)
    found = next((t for t in listed if t["name"] == tool), None)
    if found is None:
        fail(_no_such_tool(endpoint, tool, listed))
    schema: dict[str, Any] = found.get("inputSchema") or {}
    return schema


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

    def unknown_tool(error: dict[str, Any]) -> str | None:
        data = error.get("data")
        named = isinstance(data, dict) and data.get("field") == "name" and error.get("code") == -32602
        return _no_such_tool(endpoint, tool, _listed_tools(endpoint, api_key)) if named else None

    result = request(endpoint, "tools/call", {"name": tool, "arguments": values}, api_key, unknown_tool)
    if out is Format.json:
        typer.echo(output.json_text(result))
    elif "structuredContent" in result:
        typer.echo(output.json_text(result["structuredContent"]))
    else:
        for block in result.get("content", []):
            typer.echo(block.get("text", output.json_text(block, indent=None)))
    if result.get("isError"):
        raise typer.Exit(code=1)
