"""How every apimcp server starts: it says where it answers only once it accepts connections."""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

import pytest

from apimcp.servers.factory import server_for
from apimcp.servers.lifecycle import COLLECTOR_THRESHOLDS, settle_memory
from tests.support.processes import free_port


async def _hello(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_server_announces_itself_only_once_its_port_accepts_connections() -> None:
    port = free_port()
    connected: list[bool] = []

    def listening() -> None:
        # blocking, in the server's own loop: only the kernel's backlog can take this connection
        with socket.create_connection(("127.0.0.1", port), timeout=30):
            connected.append(True)
        server.should_exit = True

    server = server_for(_hello, lambda: None, host="127.0.0.1", port=port, on_listening=listening)
    asyncio.run(server.serve())
    assert connected == [True]


def test_a_server_that_cannot_listen_announces_nothing() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        announced: list[bool] = []
        server = server_for(
            _hello, lambda: None, host="127.0.0.1", port=port, on_listening=lambda: announced.append(True)
        )
        with pytest.raises(SystemExit):
            asyncio.run(server.serve())
    assert announced == []


def test_a_settled_server_collects_cycles_after_fifty_thousand_new_objects_not_seven_hundred() -> None:
    before = gc.get_threshold()
    try:
        settle_memory()
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS == (50_000, 20, 100)
        assert gc.get_freeze_count() > 0  # what was alive is out of the collector's sight
    finally:
        gc.set_threshold(*before)
