"""Control planes on both databases: a fresh SQLite file, and a fresh database on the local PostgreSQL, each a copy
of one migrated at the start of the session; an empty SQLite file or PostgreSQL schema for the migration tests."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

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


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated once to the newest revision: each SQLite plane starts from a copy (a copy costs
    milliseconds, running every migration a third of a second)."""
    path = tmp_path_factory.mktemp("migrated") / "apimcp.db"
    open_store(f"sqlite:///{path}").dispose()
    return path


def _database(name: str) -> str:
    """The test server's URL naming database `name` instead."""
    return urlunsplit(urlsplit(POSTGRES)._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def migrated_postgres() -> Iterator[str]:
    """A PostgreSQL database migrated once: each PostgreSQL plane is a database made from it (CREATE DATABASE ...
    TEMPLATE), dropped afterwards."""
    name = "apimcp_template_" + secrets.token_hex(6)
    with psycopg.connect(POSTGRES, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    try:
        open_store(_database(name)).dispose()
        yield name
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE {name}")


@contextmanager
def _from_template(template: str) -> Iterator[str]:
    name = "apimcp_" + secrets.token_hex(6)
    with psycopg.connect(POSTGRES, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    try:
        yield _database(name)
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def plane(request: pytest.FixtureRequest, database_url: str, migrated_sqlite: Path) -> Iterator[ControlPlane]:
    with ExitStack() as stack:
        url = database_url
        if url.startswith("sqlite:///"):
            target = Path(url.removeprefix("sqlite:///"))
            if not target.exists():
                shutil.copyfile(migrated_sqlite, target)
        else:
            url = stack.enter_context(_from_template(request.getfixturevalue("migrated_postgres")))
        store = open_store(url)
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
