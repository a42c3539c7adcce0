"""The REST backend on the lean client: what it cannot send is a tool error like aiohttp's refusals, logged once
without the values."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from apimcp.backends.base import Failure
from apimcp.backends.lane import exchange, fast_lane
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.http1.answer import Answer
from apimcp.importers.openapi import import_openapi
from tests.gateway.conftest import ECHO_SPEC
from tests.http1.test_client import Served, client, ok, raw_server

pytestmark = pytest.mark.anyio
ECHO = import_openapi(str(ECHO_SPEC))


async def test_a_target_with_a_space_is_refused_before_anything_is_sent(caplog: pytest.LogCaptureFixture) -> None:
    session = new_session()
    try:
        assert fast_lane(session) is not None
        backend = RestBackend(ECHO, session, base_url="http://127.0.0.1:9/a b")
        operation = ECHO.operation("get_item")
        assert operation is not None
        result = await backend.call(operation, {"itemId": "1"})
    finally:
        await close_session(session)
    assert isinstance(result, Failure)
    said = "the request's path or query holds a space or a control character"
    assert result.message == f"The request cannot be sent: {said}"
    [logged] = [r for r in caplog.records if r.name == "apimcp.backends" and "could not be sent" in r.getMessage()]
    assert logged.levelno == logging.WARNING


async def test_a_call_past_its_timeout_fails_and_leaves_its_task_usable_while_a_cancellation_goes_through() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(5 if b"/slow" in head else 0)
        writer.write(ok(b"{}"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        begun = time.monotonic()
        slow = await exchange(
            lane, "GET", served.url.with_path("/slow"), {}, None, public_url=str(served.url), timeout_seconds=0.2,
            max_bytes=100,
        )  # fmt: skip
        waited = time.monotonic() - begun
        assert isinstance(slow, Failure) and slow.message.startswith("The backend did not answer within 0.2 s")
        # timing-ok: a deadline never fires early, and the server would answer 4.7 s later than it does
        assert 0.2 <= waited < 5
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0  # the deadline's cancellation was taken back
        await asyncio.sleep(0.01)  # and nothing cancels this task later
        fine = await exchange(
            lane, "GET", served.url, {}, None, public_url=str(served.url), timeout_seconds=0.2, max_bytes=100
        )
        assert isinstance(fine, Answer) and fine.status == 200

        async def call() -> object:
            return await exchange(
                lane, "GET", served.url.with_path("/slow"), {}, None, public_url=str(served.url),
                timeout_seconds=5, max_bytes=100,
            )  # fmt: skip

        caller = asyncio.create_task(call())
        await asyncio.sleep(0.05)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
    await lane.close()
