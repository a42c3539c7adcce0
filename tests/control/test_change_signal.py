"""Gateways are woken by commits that change something, and only by those."""

from __future__ import annotations

import asyncio
import time

from apimcp.control import changes
from apimcp.control.changes import ChangeSignal
from apimcp.control.domain import groups, orgs
from apimcp.control.plane import ControlPlane


def test_only_commits_that_record_a_change_notify(plane: ControlPlane) -> None:
    with plane.session() as session:
        organization = orgs.create(session, "acme")
    start = plane.signal.generation
    for _ in range(3):
        with plane.session() as session:
            changes.latest(session)  # a read: commits, changes nothing
    with plane.session() as session:
        groups.create(session, organization.id, "edge", {"zone": "eu"})  # no gateway-visible change recorded
    assert plane.signal.generation == start
    with plane.session() as session:
        changes.record(session, organization.id, "plan", "p1")
    assert plane.signal.generation == start + 1


def test_a_wait_returns_at_once_when_a_notification_came_since_the_check() -> None:
    signal = ChangeSignal()

    async def scenario() -> None:
        seen = signal.generation
        signal.notify()  # between reading the store and starting to wait
        async with asyncio.timeout(30):  # a wait that missed it would last its hour
            await signal.wait(3600, seen)

    asyncio.run(scenario())


def test_waiting_without_news_lasts_the_timeout_and_close_ends_it() -> None:
    signal = ChangeSignal()

    async def scenario() -> float:
        began = time.monotonic()
        await signal.wait(0.2, signal.generation)
        waited = time.monotonic() - began
        asyncio.get_running_loop().call_later(0.05, signal.close)
        async with asyncio.timeout(30):  # closing ends a wait of an hour
            await signal.wait(3600, signal.generation)
        return waited

    assert asyncio.run(scenario()) >= 0.19
