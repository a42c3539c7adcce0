"""Backend credentials, unreachable backends, and secrets that never show."""

from __future__ import annotations

import logging

import pytest

from tests.gateway.conftest import ECHO_SPEC, live_gateway

SECRET = "s3cr3t-value-never-shown"


@pytest.mark.parametrize(
    ("credentials", "where", "expected"),
    [
        ("{type: bearer, token: {env: ECHO_SECRET}}", "header", ("Authorization", "Bearer ***")),
        ("{type: basic, username: ada, password: {env: ECHO_SECRET}}", "header", ("Authorization", "Basic ***")),
        ("{type: api_key, name: X-Api-Key, value: {env: ECHO_SECRET}}", "header", ("X-Api-Key", "***")),
        ("{type: api_key, in: query, name: key, value: {env: ECHO_SECRET}}", "query", "key=***"),
        ("{type: api_key, in: cookie, name: token, value: {env: ECHO_SECRET}}", "cookie", ("token", "***")),
    ],
)  # fmt: skip
def test_credentials_reach_the_backend_and_nothing_else(  # the echo shows them masked: they arrived
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, credentials: str, where: str, expected: object
) -> None:
    monkeypatch.setenv("ECHO_SECRET", SECRET)
    caplog.set_level(logging.DEBUG)
    config = (
        f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: '{{backend}}'\n    timeout: 1\n"
        f"    credentials: {credentials}\n"
    )
    with live_gateway(config) as mcp:
        sent = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result["structuredContent"]
        if where == "query":
            assert sent["query"] == expected
        else:
            name, value = expected  # type: ignore[misc]
            assert sent["headers" if where == "header" else "cookies"][name] == value
        failures = [
            mcp.modern("tools/call", {"name": "slow", "arguments": {}}),  # a timeout
            mcp.modern("tools/call", {"name": "get_status", "arguments": {"code": 500}}),  # an error status
            mcp.modern("tools/call", {"name": "get_media", "arguments": {"kind": "pdf"}}),  # a resource URI
            mcp.modern("tools/list"),
        ]
        for reply in failures:
            assert SECRET not in reply.text + str(reply.messages)
    backend_loggers = ("aiohttp.access", "aiohttp.server", "aiohttp.web")  # the echo backend sees the key, rightly
    gateway_logs = [r.getMessage() for r in caplog.records if r.name not in backend_loggers]
    assert gateway_logs
    assert not [line for line in gateway_logs if SECRET in line]


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        ("http://127.0.0.1:1/v1", "Could not connect to the backend at 127.0.0.1:1: connection refused"),
        ("http://no-such-host.invalid/v1", "Could not resolve the backend host 'no-such-host.invalid'"),
    ],
)
def test_unreachable_backends_are_tool_errors(backend: str, message: str) -> None:
    config = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: {backend}\n    timeout: 3\n"
    with live_gateway(config) as mcp:
        result = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "1"}}).result
        assert result["isError"] is True
        assert result["content"][0]["text"] == message
