"""The REST backend on the lean client: what it cannot send is a tool error like aiohttp's refusals, logged once
without the values."""

from __future__ import annotations

import logging

import pytest

from apimcp.backends.base import Failure
from apimcp.backends.lane import fast_lane
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.importers.openapi import import_openapi
from tests.gateway.conftest import ECHO_SPEC

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
