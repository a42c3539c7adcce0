"""Fetch settings for tests whose servers run on loopback, which the default fetch policy refuses."""

from __future__ import annotations

import socket
import types
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from apimcp.safety import fetch as fetch_module
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import Fetcher, FetchLimits

LOOPBACK_ALLOWED = AddressPolicy.allowing(["127.0.0.1"])
"""The allow-list of the test servers: they listen on 127.0.0.1."""


def loopback_fetcher(limits: FetchLimits | None = None) -> Fetcher:
    return Fetcher(LOOPBACK_ALLOWED, limits or FetchLimits())


def forbid_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any connection the guarded fetch attempts fail the test: refusals of addresses outside loopback must
    happen before connecting, and a regression must not send anything anywhere."""

    def forbidden(address: object, *args: object, **kwargs: object) -> socket.socket:
        raise AssertionError(f"the guarded fetch tried to connect to {address}")

    names = [name for name in dir(socket) if not name.startswith("__")]
    guarded = types.SimpleNamespace(**{name: getattr(socket, name) for name in names})
    guarded.create_connection = forbidden
    monkeypatch.setattr(fetch_module, "socket", guarded)


@contextmanager
def counting_listener() -> Iterator[socket.socket]:
    """A listening loopback socket that nobody should connect to; `connections_to` counts who did."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    try:
        yield listener
    finally:
        listener.close()


def connections_to(listener: socket.socket) -> int:
    """How many connections reached `listener` since the last count (each is accepted and closed)."""
    count = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1
