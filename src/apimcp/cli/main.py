"""`apimcp`: the command line entry point."""

from __future__ import annotations

import json

import typer

from apimcp import __version__
from apimcp.demo import NotebookDemo
from apimcp.protocol import EndpointOptions, McpEndpoint, TransportSecurity
from apimcp.serving import server_for

app = typer.Typer(
    name="apimcp",
    help="Expose the APIs you already have (OpenAPI, GraphQL, gRPC) as MCP servers.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Expose the APIs you already have as MCP servers."""


@app.command()
def version() -> None:
    """Print the apimcp version."""
    typer.echo(__version__)


@app.command()
def demo(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8765, help="Port to listen on."),
) -> None:
    """Start the demo MCP server (an in-memory notebook) and print how to connect to it."""
    security = TransportSecurity() if host in ("127.0.0.1", "localhost", "::1") else TransportSecurity.for_hosts([host])
    endpoint = McpEndpoint(NotebookDemo(), EndpointOptions(security=security))
    url = f"http://{'localhost' if host == '127.0.0.1' else host}:{port}/mcp"
    typer.echo(f"apimcp {__version__} demo: MCP endpoint {url}")
    typer.echo("Speaks MCP 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 (sessions) and 2026-07-28 (stateless).")
    typer.echo("Client configuration (e.g. for an MCP client's mcp.json):")
    typer.echo(json.dumps({"mcpServers": {"apimcp-demo": {"type": "http", "url": url}}}, indent=2))
    typer.echo("Press Ctrl-C to stop.")
    server_for(endpoint, endpoint.shutdown, host=host, port=port, log_level="info").run()


def main() -> None:
    app()
