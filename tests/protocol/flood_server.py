"""The showcase endpoint in a process of its own, served as apimcp serves (`serving.server_for`).

Flood tests measure this process's memory from /proc while they attack it:
    python -m tests.protocol.flood_server PORT MAX_SESSIONS_PER_ENDPOINT
"""

from __future__ import annotations

import sys

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from apimcp.servers.event_loop import run_async
from apimcp.servers.factory import server_for
from tests.protocol.showcase import Showcase


def main() -> None:
    port, per_endpoint = int(sys.argv[1]), int(sys.argv[2])
    # one client floods the endpoint: its share of it (max_sessions_per_caller) is the whole endpoint here
    store = MemorySessionStore(max_sessions_per_endpoint=per_endpoint, max_sessions_per_caller=per_endpoint)
    options = EndpointOptions(sessions=store)
    endpoint = McpEndpoint(Showcase(), options)
    run_async(server_for(endpoint, endpoint.shutdown, host="127.0.0.1", port=port).serve())


if __name__ == "__main__":
    main()
