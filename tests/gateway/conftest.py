from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from apimcp.backends.rest import close_session, new_session
from apimcp.codemode.limits import CodeModeLimits
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.plan import plan_gateway
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.protocol import EndpointOptions
from tests.gateway.echo_backend import running_backend
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp

HERE = Path(__file__).parent
ECHO_SPEC = HERE / "echo_api.yaml"


def echo_config(backend: str, extra: str = "") -> str:
    return f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    backend: {backend}
    timeout: 1
    max_response_bytes: 1048576
{extra}
"""


@asynccontextmanager
async def gateway_for(config_text: str | None = None) -> AsyncIterator[GatewayApp]:
    """The echo backend and a gateway in front of it, in the current loop.

    `config_text` may name the echo backend's URL as `{backend}`.
    """
    async with running_backend() as backend:
        text = config_text.replace("{backend}", backend) if config_text else echo_config(backend)
        config = parse_config(text, "test.yaml", HERE)
        session = new_session()
        try:
            app = build_gateway(plan_gateway(config), session)
            yield app
            app.shutdown()
        finally:
            await close_session(session)


@asynccontextmanager
async def gateway_of(
    config_text: str, base_dir: Path, code_limits: CodeModeLimits | None = None
) -> AsyncIterator[GatewayApp]:
    """The gateway a configuration text describes (paths in it relative to `base_dir`), in the current loop."""
    session = new_session()
    try:
        plan = plan_gateway(parse_config(config_text, "gateway.yaml", base_dir))
        app = build_gateway(plan, session, code_limits=code_limits)
        yield app
        await app.runtime.close()
    finally:
        await close_session(session)


@contextmanager
def live_echo_gateway(config_text: str, tmp: Path, code_limits: CodeModeLimits | None = None) -> Iterator[str]:
    """The echo backend and a gateway built from `config_text` (`{backend}` names the echo backend's URL, paths
    are relative to `tmp`), served on loopback: the gateway's base URL, http://127.0.0.1:PORT."""

    @asynccontextmanager
    async def make() -> AsyncIterator[GatewayApp]:
        async with (
            running_backend() as backend,
            gateway_of(config_text.replace("{backend}", backend), tmp, code_limits) as app,
        ):
            yield app

    with live_app(make) as base:
        yield base.replace("//localhost:", "//127.0.0.1:")


@contextmanager
def live_gateway(config_text: str | None = None) -> Iterator[McpHttp]:
    """A raw MCP client of the `echo` exposition of a gateway built from `config_text`."""
    with live_app(lambda: gateway_for(config_text)) as base, McpHttp(f"{base}/mcp/echo") as mcp:
        yield mcp


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    with live_app(gateway_for) as base:
        yield f"{base}/mcp/echo"


@pytest.fixture
async def runtime() -> AsyncIterator[GatewayRuntime]:
    """A gateway runtime of its own, with no snapshot applied yet."""
    session = new_session()
    built = GatewayRuntime(session, EndpointOptions())
    yield built
    built.shutdown()
    await close_session(session)


def text_of(result: Any) -> str:
    return str(result.content[0].text)
