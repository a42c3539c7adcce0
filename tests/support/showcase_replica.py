"""One replica of the engine's showcase handler, as a process sharing the state `APIMCP_STATE_*` names.

`python -m tests.support.showcase_replica PORT` serves the showcase at /mcp, with sessions in the shared
store and the Redis relay, so that tests can put several behind a balancer and check what crosses replicas
(answers to elicitation and sampling, cancellations, DELETE) on the engine's own test handler.
"""

from __future__ import annotations

import os
import sys

from apimcp.protocol import EndpointOptions, McpEndpoint, RequestStateSealer, SessionLimits
from apimcp.serving import run_async, server_for
from apimcp.state.backend import StateConfig, open_state
from tests.protocol.showcase import Showcase


async def main(port: int) -> None:
    opened = open_state(StateConfig.from_environment(), SessionLimits())
    sealer = RequestStateSealer([os.environ["APIMCP_REQUEST_STATE_KEYS"].encode()])  # the same on every replica
    options = EndpointOptions(
        sessions=opened.sessions,
        relay=opened.relay,
        events=opened.events,
        request_state=sealer,
        client_request_timeout=10,
    )
    endpoint = McpEndpoint(Showcase(), options)
    await server_for(endpoint, endpoint.shutdown, host="127.0.0.1", port=port).serve()


if __name__ == "__main__":
    run_async(main(int(sys.argv[1])))
