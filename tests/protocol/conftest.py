from collections.abc import Iterator

import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import McpHttp


@pytest.fixture(scope="module")
def showcase() -> Showcase:
    return Showcase()


@pytest.fixture(scope="module")
def endpoint(showcase: Showcase) -> McpEndpoint:
    return McpEndpoint(showcase, EndpointOptions(sessions=MemorySessionStore(), client_request_timeout=5))


@pytest.fixture(scope="module")
def url(endpoint: McpEndpoint) -> Iterator[str]:
    with live_server(endpoint, endpoint.shutdown) as base:
        yield f"{base}/mcp"


@pytest.fixture
def mcp(url: str) -> Iterator[McpHttp]:
    client = McpHttp(url)
    yield client
    client.close()
