"""Arguments that would change the request's shape are tool errors or data, through the whole gateway."""

from __future__ import annotations

import logging

import pytest

from tests.gateway.conftest import live_gateway


def test_cr_lf_nul_in_a_header_parameter_give_a_tool_error_not_32603_nor_a_traceback_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with live_gateway() as mcp:
        for value in ("1\r\nX-Injected: yes", "1\x00", "1\n"):
            reply = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "1", "X-Trace": value}})
            result = reply.result  # a result, not a JSON-RPC error
            assert result["isError"] is True
            text = result["content"][0]["text"]
            assert text.startswith("Invalid arguments: argument 'X-Trace': a header parameter cannot be sent: ")
            assert "control character" in text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_dot_segments_in_a_path_parameter_reach_the_backend_as_data() -> None:
    with live_gateway() as mcp:
        for value, path in (("..", "/v1/items/%2E%2E"), ("../status/500", "/v1/items/%2E%2E%2Fstatus%2F500")):
            result = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": value}}).result
            assert result["structuredContent"]["path"] == path
