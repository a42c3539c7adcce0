"""Pending elicitations: single use, reused while waiting, bounded per owner and in total."""

from __future__ import annotations

import pytest

from apimcp.state.owners import session_owner, user_owner
from apimcp.state.pending import MemoryPendingStore, with_connection

pytestmark = pytest.mark.anyio


async def test_a_pending_link_works_once() -> None:
    store = MemoryPendingStore()
    pending = await store.open("user a", "org/s1", "e1", "session-1")
    assert (await store.take(pending.id)) == pending
    assert await store.take(pending.id) is None
    assert await store.get(pending.id) is None


async def test_asking_again_gives_the_same_link_and_tells_the_session_that_asked_last() -> None:
    store = MemoryPendingStore()
    first = await store.open("user a", "org/s1", "e1", "session-1")
    again = await store.open("user a", "org/s1", "e1", "session-2")
    assert again.id == first.id
    assert again.session_id == "session-2"
    other = await store.open("user b", "org/s1", "e1", "session-3")
    assert other.id != first.id


async def test_a_connection_in_progress_is_found_by_its_state_only_until_taken() -> None:
    store = MemoryPendingStore()
    started = with_connection(await store.open("user a", "org/s1", "e1", None))
    await store.update(started)
    assert started.state is not None
    assert (await store.by_state(started.state)) == started
    await store.take(started.id)
    assert await store.by_state(started.state) is None


async def test_an_owner_keeps_a_few_links_and_the_store_a_bounded_number() -> None:
    store = MemoryPendingStore(max_pending=10, max_per_owner=3)
    mine = [await store.open("user a", f"org/s{i}", "e1", None) for i in range(5)]
    assert [await store.get(p.id) is not None for p in mine] == [False, False, True, True, True]
    for i in range(20):
        await store.open(f"user {i}", "org/s", "e1", None)
    assert len(store) <= 10


async def test_sessions_nobody_authenticated_hold_a_tenth_of_the_store_and_never_push_out_users_links() -> None:
    """The finding: sessions are free to open, so anonymous callers opening links in new sessions pushed every
    user's link out of the store (the oldest went first, whoever's it was)."""
    store = MemoryPendingStore(max_pending=100, max_per_owner=3)
    users = [await store.open(user_owner(f"alice{i}"), "org/s", "e1", None) for i in range(5)]
    flood = [await store.open(session_owner(f"s{i}"), "org/s", "e1", f"s{i}") for i in range(500)]
    assert all([await store.get(p.id) is not None for p in users])
    assert sum([await store.get(p.id) is not None for p in flood]) == 10  # the newest tenth
    assert await store.get(flood[-1].id) is not None and len(store) == 15


async def test_links_expire() -> None:
    store = MemoryPendingStore(ttl_seconds=-1)
    pending = await store.open("user a", "org/s1", "e1", None)
    assert await store.get(pending.id) is None
