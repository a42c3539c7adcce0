"""Credentials a backend echoes never reach the MCP client, in any spelling, result or error, nor the logs."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.gateway.conftest import HERE, gateway_of
from tests.gateway.hostile_backend import Recorder, hostile_backend
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp

HOSTILE_SPEC = HERE / "hostile_api.yaml"
TOKEN = "bearer-t0ken/with+odd=chars"
PASSWORD = "pässword/1234"
KEY = "api-key-value-5678"
CLIENT = "client-id-9012"


@contextmanager
def hostile_gateway(credentials: str) -> Iterator[tuple[McpHttp, Recorder]]:
    """An MCP client of a gateway in front of the hostile backend, calling it with `credentials` (YAML)."""
    with hostile_backend() as backend:
        config = (
            f"services:\n  hostile:\n    openapi: {HOSTILE_SPEC}\n    backend: '{backend.url}'\n    timeout: 5\n"
            f"    credentials: {credentials}\n"
        )
        with live_app(lambda: gateway_of(config, HERE)) as base, McpHttp(f"{base}/mcp/hostile") as mcp:
            yield mcp, backend


def call(mcp: McpHttp, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The tool result, and the whole reply as the client received it."""
    reply = mcp.modern("tools/call", {"name": tool, "arguments": arguments})
    return reply.result, reply.text + str(reply.messages)


CREDENTIALS = [
    ("{type: bearer, token: {env: T_TOKEN}}", [TOKEN]),
    ("{type: basic, username: ada, password: {env: T_PASSWORD}}",
     [PASSWORD, base64.b64encode(f"ada:{PASSWORD}".encode()).decode()]),
    ("{type: api_key, name: X-Api-Key, value: {env: T_KEY}}", [KEY]),
    ("{type: api_key, in: query, name: key, value: {env: T_KEY}}", [KEY]),
    ("{type: api_key, in: cookie, name: session, value: {env: T_KEY}}", [KEY]),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("T_TOKEN", TOKEN), ("T_PASSWORD", PASSWORD), ("T_KEY", KEY), ("T_CLIENT", CLIENT)):
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(("credentials", "secrets"), CREDENTIALS, ids=["bearer", "basic", "header", "query", "cookie"])
def test_a_backend_that_echoes_request_headers_no_longer_hands_the_credentials_to_the_mcp_client(
    caplog: pytest.LogCaptureFixture, credentials: str, secrets: list[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    with hostile_gateway(credentials) as (mcp, backend):
        for style in ("json", "slashes", "ascii", "text", "error", "percent"):
            result, seen = call(mcp, "echo", {"style": style})
            assert result.get("isError", False) is (style == "error"), result
            for secret in secrets:
                assert secret not in seen, style
                assert secret not in str(result.get("structuredContent")), style
            assert "***" in result["content"][0]["text"], style
        assert len(backend.seen) == 6  # each call reached the backend, with the credentials
    backend_loggers = ("aiohttp.access", "aiohttp.server", "aiohttp.web")  # the backend sees them, rightly
    logged = " ".join(r.getMessage() for r in caplog.records if r.name not in backend_loggers)
    assert not [secret for secret in secrets if secret in logged]


def test_what_the_client_sees_is_the_echo_with_the_credentials_replaced() -> None:
    with hostile_gateway("{type: bearer, token: {env: T_TOKEN}}") as (mcp, backend):
        result, _ = call(mcp, "echo", {})
        assert result["structuredContent"]["headers"]["Authorization"] == "Bearer ***"
        assert backend.seen[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
        error, _ = call(mcp, "echo", {"style": "error"})
        assert error["content"][0]["text"].startswith("HTTP 401 Unauthorized: refused: ")
        assert "'Authorization': 'Bearer ***'" in error["content"][0]["text"]


def test_an_operation_needing_two_schemes_at_once_gets_both_credentials_and_both_are_masked() -> None:
    both = (
        "[{type: api_key, name: X-Api-Key, value: {env: T_KEY}},"
        " {type: api_key, name: X-Client-Id, value: {env: T_CLIENT}}]"
    )
    with hostile_gateway(both) as (mcp, backend):
        result, seen = call(mcp, "echo", {})
        headers = result["structuredContent"]["headers"]
        assert (headers["X-Api-Key"], headers["X-Client-Id"]) == ("***", "***")
        assert (backend.seen[0]["headers"]["X-Api-Key"], backend.seen[0]["headers"]["X-Client-Id"]) == (KEY, CLIENT)
        assert KEY not in seen and CLIENT not in seen
