"""Control planes on both databases: a fresh SQLite file, and a fresh schema on the local PostgreSQL."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from apimcp.control.crypto import KeySet
from apimcp.control.plane import ControlPlane
from apimcp.control.store import open_store
from tests.support.fetching import LOOPBACK_ALLOWED

POSTGRES = os.environ.get("APIMCP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_schema() -> Iterator[str]:
    """A schema of its own in the test database, dropped afterwards; the URL selects it."""
    schema = "apimcp_" + secrets.token_hex(6)
    with psycopg.connect(POSTGRES, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{POSTGRES}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'apimcp.db'}"
    else:
        yield from _postgres_schema()


@pytest.fixture
def plane(database_url: str) -> Iterator[ControlPlane]:
    store = open_store(database_url)
    try:
        # The tests' description servers listen on loopback, which the default fetch policy refuses.
        yield ControlPlane(store, KeySet.generate(), fetch_policy=LOOPBACK_ALLOWED)
    finally:
        store.dispose()


@pytest.fixture
def api(plane: ControlPlane) -> Iterator[object]:
    """The REST API of `plane`, served for real on a loopback port (a tests.control.api_harness.Api)."""
    from apimcp.control.api.app import create_api
    from tests.control.api_harness import Api
    from tests.support.live_server import live_server

    with live_server(create_api(plane)) as base:
        harness = Api(plane, base.replace("//localhost:", "//127.0.0.1:"))
        try:
            yield harness
        finally:
            harness.close()
