"""`apimcp`: the command line entry point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from apimcp import __version__
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import ConfigError, GatewayConfig, ServiceConfig, load_config
from apimcp.gateway.plan import GatewayPlan, plan_gateway
from apimcp.gateway.serve import serve_gateway
from apimcp.serving import run_async

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


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def client_hints(base_url: str, endpoints: dict[str, str]) -> str:
    """What to tell a user about reaching the endpoints, with a ready-to-paste client configuration."""
    lines = [f"MCP endpoint {base_url}{path}" for path in endpoints.values()]
    servers = {f"apimcp-{name}": {"type": "http", "url": base_url + path} for name, path in endpoints.items()}
    lines.append("Speaks MCP 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 (sessions) and 2026-07-28 (stateless).")
    lines.append("Client configuration (e.g. an MCP client's mcp.json):")
    lines.append(json.dumps({"mcpServers": servers}, indent=2))
    return "\n".join(lines)


def _public_base(host: str, port: int) -> str:
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "::1") else host
    return f"http://{shown}:{port}"


def run_plan(plan: GatewayPlan, host: str, port: int, banner: str = "") -> None:
    async def ready(gateway: GatewayApp) -> None:
        if banner:
            typer.echo(banner)
        typer.echo(client_hints(_public_base(host, port), gateway.index()))
        typer.echo("Press Ctrl-C to stop.")

    run_async(serve_gateway(plan, host=host, port=port, on_ready=ready))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64] or "api"


@app.command()
def serve(
    config: Path | None = typer.Argument(None, help="A YAML configuration file (see docs/configuration.md)."),
    openapi: str | None = typer.Option(None, help="An OpenAPI description (path or URL), instead of a file."),
    backend: str | None = typer.Option(None, help="The API's base URL (with --openapi)."),
    name: str | None = typer.Option(None, help="The exposition name (with --openapi; default: from the title)."),
    include: list[str] = typer.Option([], help="Only these operations (tool name, operationId, 'GET /path', tag:x)."),
    exclude: list[str] = typer.Option([], help="Not these operations (same patterns as --include)."),
    host: str | None = typer.Option(None, help="Interface to listen on (default 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port to listen on (default 8080)."),
) -> None:
    """Serve APIs as MCP servers, from a configuration file or a single OpenAPI description."""
    if (config is None) == (openapi is None):
        raise fail("give either a configuration file or --openapi (and not both)")
    try:
        if config is not None:
            gateway_config = load_config(config)
        else:
            service = ServiceConfig(
                openapi=openapi or "", backend=backend, include=tuple(include), exclude=tuple(exclude)
            )
            gateway_config = GatewayConfig(services={"api": service})
        if host is not None or port is not None:
            server = gateway_config.server.model_copy(
                update={k: v for k, v in (("host", host), ("port", port)) if v is not None}
            )
            gateway_config = gateway_config.model_copy(update={"server": server})
        plan = plan_gateway(gateway_config)
    except ConfigError as exc:
        raise fail(str(exc)) from exc
    except ValueError as exc:  # pydantic validation of command-line values
        raise fail(str(exc)) from exc
    if openapi is not None:
        plan = _renamed(plan, name or _slug(plan.services["api"].service.name))
    run_plan(plan, gateway_config.server.host, gateway_config.server.port)


def _renamed(plan: GatewayPlan, name: str) -> GatewayPlan:
    (only,) = plan.expositions
    return GatewayPlan(plan.config, plan.services, (type(only)(name, only.config, only.services),))


@app.command()
def demo(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8765, help="Port to listen on."),
) -> None:
    """Start a demo REST API with its OpenAPI description and expose it as an MCP server."""
    from apimcp.demo import run_demo  # noqa: PLC0415 - the demo's backend is only loaded when asked for
    from apimcp.demo_api import spec_path  # noqa: PLC0415

    def ready(gateway: GatewayApp, backend_url: str) -> None:
        typer.echo(f"apimcp {__version__} demo: the Bookshelf REST API runs at {backend_url}")
        typer.echo(f"  described by {spec_path()}")
        typer.echo(client_hints(_public_base(host, port), gateway.index()))
        typer.echo("Press Ctrl-C to stop.")

    run_demo(host, port, ready)


def main() -> None:
    app()
