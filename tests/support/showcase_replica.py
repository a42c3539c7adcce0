"""One replica of the engine's showcase handler, as a process sharing the state `APIMCP_STATE_*` names.

`python -m tests.support.showcase_replica PORT` serves the showcase at /mcp (and the task-running `Jobs`
handler at /jobs), with sessions and tasks in the shared store and the Redis relay, so that tests can put
several behind a balancer and check what crosses replicas (answers to elicitation and sampling,
cancellations, DELETE, tasks) on the engine's own test handlers.
"""

from __future__ import annotations

import os
import sys

from apimcp.protocol import EndpointOptions, McpEndpoint, RequestStateSealer, SessionLimits
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.servers.event_loop import run_async
from apimcp.servers.factory import server_for
from apimcp.state.backend import StateConfig, open_state
from tests.protocol.jobs import Jobs
from tests.protocol.showcase import Showcase


async def main(port: int) -> None:
    opened = open_state(StateConfig.from_environment(), SessionLimits())
    sealer = RequestStateSealer([os.environ["APIMCP_REQUEST_STATE_KEYS"].encode()])  # the same on every replica
    options = EndpointOptions(
        sessions=opened.sessions,
        relay=opened.relay,
        events=opened.events,
        tasks=opened.tasks,
        request_state=sealer,
        client_request_timeout=10,
    )
    endpoint = McpEndpoint(Showcase(), options)
    jobs = McpEndpoint(Jobs(), options, endpoint_id="jobs")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        await (jobs if path.startswith("/jobs") else endpoint)(scope, receive, send)

    def shutdown() -> None:
        endpoint.shutdown()
        jobs.shutdown()

    await server_for(app, shutdown, host="127.0.0.1", port=port).serve()


if __name__ == "__main__":
    run_async(main(int(sys.argv[1])))
