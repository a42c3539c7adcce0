"""Where a description says an operation is called when a plan gives no backend URL, and when it says nowhere a
call can reach: no server, or only a path."""

from __future__ import annotations

import aiohttp
import pytest

from apimcp.backends.rest import RestBackend
from apimcp.catalog.base_urls import backend_needed, described_base_url
from apimcp.catalog.model import Operation, RestBinding, ServerTemplate, Service

pytestmark = pytest.mark.anyio
API = (ServerTemplate("https://api.example.com/v1"),)


def _operation(name: str, *servers: str) -> Operation:
    binding = RestBinding("GET", f"/{name}", servers=tuple(ServerTemplate(url) for url in servers))
    return Operation(tool_name=name, input_schema={"type": "object"}, binding=binding)


def test_an_operation_is_called_at_its_own_server_else_the_description_s() -> None:
    service = Service("s", "1", (), servers=API)
    assert described_base_url(service, _operation("a")) == "https://api.example.com/v1"
    assert described_base_url(service, _operation("b", "https://other.example.com")) == "https://other.example.com"
    assert described_base_url(service, _operation("c", "/v2")) == "https://api.example.com/v1/v2"  # joined
    assert described_base_url(Service("s", "1", ()), _operation("d")) is None


def test_a_plan_needs_a_backend_when_a_served_operation_has_no_server_or_only_a_path() -> None:
    only_a_path = Service("s", "1", (), servers=(ServerTemplate("/v1"),))
    assert backend_needed(only_a_path, [_operation("a")]) is not None
    assert "('/v1')" in str(backend_needed(only_a_path, [_operation("a")]))
    assert backend_needed(only_a_path, [_operation("b", "/v2")]) is not None  # /v1/v2: still no host
    assert backend_needed(only_a_path, [_operation("c", "https://api.example.com")]) is None
    bare = Service("s", "1", ())
    assert backend_needed(bare, [_operation("a")]) == "declares no servers"
    assert backend_needed(bare, [_operation("b", "https://api.example.com")]) is None  # each says where it is
    assert backend_needed(Service("s", "1", (), servers=API), [_operation("a")]) is None


async def test_a_rest_backend_of_operations_with_their_own_servers_needs_no_backend_url() -> None:
    """The plan checks accept a description whose operations each name their server: so does the backend."""
    operation = _operation("a", "https://api.example.com/v2")
    async with aiohttp.ClientSession() as session:
        backend = RestBackend(Service("s", "1", (operation,)), session)
        assert backend.base_url_for(operation) == "https://api.example.com/v2"
