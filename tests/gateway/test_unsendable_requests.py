"""Through the whole gateway: arguments aiohttp would refuse to put in a header are tool errors, not -32603 with
a traceback; and a backend at a cloud metadata address (written as one, or a name resolving to one) is refused
before the gateway connects anywhere."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from apimcp.backends.rest import close_session, new_session
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.plan import plan_gateway
from tests.backends.test_metadata_backends import NAMES, record_attempts, resolving
from tests.gateway.conftest import ECHO_SPEC, HERE, live_gateway
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp

FORMS_SPEC = HERE / "forms_api.yaml"
INJECTED = "a\r\nX-Injected: 1"
DATA_URL = "data:text/plain\r\nX-Injected: 1;base64,aGVsbG8="


def forms_config(backend: str = "{backend}") -> str:
    return f"""
services:
  echo:
    openapi: {FORMS_SPEC}
    backend: {backend}
    timeout: 1
"""


def tool_error(mcp: McpHttp, tool: str, arguments: dict[str, Any]) -> str:
    result = mcp.modern("tools/call", {"name": tool, "arguments": arguments}).result  # a result, not an error
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_tool_arguments_can_still_give_32603_with_a_data_url_media_type_as_the_body_s_content_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finding (a): the media type of a data: URL body became the Content-Type, and aiohttp's ValueError a -32603."""
    caplog.set_level(logging.DEBUG)
    with live_gateway() as mcp:
        text = tool_error(mcp, "post_raw", {"body": DATA_URL})
        assert text.startswith("Invalid arguments: argument 'body': the data: URL's media type cannot be a ")
        assert "control character CR" in text
        text = tool_error(mcp, "post_raw", {"body": "data:text;base64,aGVsbG8="})
        assert "it is not a media type (type/subtype" in text
    no_traceback(caplog)


def test_tool_arguments_can_still_give_32603_with_a_data_url_media_type_as_a_part_s_content_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finding (b): a multipart part's content type taken from a data: URL the same way."""
    caplog.set_level(logging.DEBUG)
    with live_gateway() as mcp:
        text = tool_error(mcp, "upload", {"id__path": 1, "file": DATA_URL})
        assert text.startswith("Invalid arguments: argument 'file': the data: URL's media type cannot be a ")
    no_traceback(caplog)


def test_tool_arguments_can_still_give_32603_with_client_chosen_multipart_field_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Finding (c): field names the client chooses (extra fields, a form kept whole) go into a part's header."""
    caplog.set_level(logging.DEBUG)
    with live_gateway(forms_config()) as mcp:
        text = tool_error(mcp, "post_extra", {"note": "n", INJECTED: "v"})
        assert text.startswith(f"Invalid arguments: argument {INJECTED!r}: a form field name cannot be sent: ")
        assert "control character CR" in text
        text = tool_error(mcp, "post_whole", {"body": {INJECTED: "v"}})
        assert text.startswith(f"Invalid arguments: argument 'body': the form field name {INJECTED!r} cannot be sent")
        fine = mcp.modern("tools/call", {"name": "post_whole", "arguments": {"body": {'quote"d': "v"}}}).result
        assert not fine.get("isError"), fine
    no_traceback(caplog)


def test_tool_arguments_can_still_give_32603_past_what_build_request_knows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The safety net: any ValueError from building or sending a request is a tool error, logged once without the
    values (here a part content type the description declares with a control character)."""
    caplog.set_level(logging.DEBUG)
    with live_gateway(forms_config()) as mcp:
        text = tool_error(mcp, "post_declared", {"file": "aGVsbG8="})
        assert text.startswith("The request cannot be sent: Forbidden control character detected in headers.")
    no_traceback(caplog)
    [logged] = [r for r in caplog.records if r.name == "apimcp.backends" and "could not be sent" in r.getMessage()]
    assert logged.levelno == logging.WARNING
    assert re.fullmatch(
        r"post_declared: the request to 127\.0\.0\.1:\d+ could not be sent \(ValueError\)", logged.getMessage()
    )


def test_a_plan_s_backend_may_point_at_cloud_metadata_addresses_in_a_configuration() -> None:
    """Finding: the configuration accepted a backend at 169.254.169.254; it is refused, naming why."""
    with pytest.raises(ConfigError, match="a cloud metadata address"):
        parse_config(forms_config("http://169.254.169.254/latest/meta-data/iam/security-credentials/"), "g.yaml", HERE)


@asynccontextmanager
async def resolving_gateway(config_text: str) -> AsyncIterator[GatewayApp]:
    """A gateway whose backends' names resolve by NAMES (and are never looked up for real)."""
    session = new_session(resolve=resolving(NAMES))
    try:
        app = build_gateway(plan_gateway(parse_config(config_text, "gateway.yaml", HERE)), session)
        yield app
        await app.runtime.close()
    finally:
        await close_session(session)


@contextmanager
def metadata_gateway(backend: str) -> Iterator[McpHttp]:
    config = f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    backend: {backend}
    timeout: 1
"""
    with live_app(lambda: resolving_gateway(config)) as base, McpHttp(f"{base}/mcp/echo") as mcp:
        yield mcp


def test_a_plan_s_backend_may_point_at_cloud_metadata_addresses_by_name(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Finding: a backend name resolving to a metadata address let `tools/call` read the host's cloud credentials."""
    caplog.set_level(logging.DEBUG)
    attempts = record_attempts(monkeypatch)
    with metadata_gateway("http://metadata.test/latest/meta-data/iam/security-credentials/") as mcp:
        text = tool_error(mcp, "get_item", {"itemId": "1"})
    assert text.startswith("The backend is refused: metadata.test resolves to a cloud metadata address")
    assert [a for a in attempts if a != "127.0.0.1"] == []  # only the test's own client, on loopback
    no_traceback(caplog)
