"""The control plane's database: SQLite by default, PostgreSQL for real deployments.

`open_store` creates the engine, brings the schema to the newest migration and
hands out sessions. SQLite runs in WAL mode with foreign keys on, so the same
integrity rules hold on both databases.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS = Path(__file__).parent / "migrations"


def default_data_dir() -> Path:
    """Where `apimcp serve` keeps its database and keys: $APIMCP_HOME, else the user's data folder."""
    configured = os.environ.get("APIMCP_HOME")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "apimcp"


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'apimcp.db'}"


def _alembic_config(connection: Any) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


class Store:
    """An engine and its session factory."""

    def __init__(self, url: str | URL) -> None:
        self.url = make_url(url)
        if self.url.drivername == "postgresql":
            self.url = self.url.set(drivername="postgresql+psycopg")
        if self.url.get_backend_name() == "sqlite":
            database = self.url.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            self.engine: Engine = create_engine(self.url, connect_args={"check_same_thread": False})
            event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            self.engine = create_engine(self.url, pool_pre_ping=True, pool_size=10, max_overflow=10)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Bring the schema to the newest revision (idempotent)."""
        self.migrate_to("head")

    def migrate_to(self, revision: str, *, down: bool = False) -> None:
        """Upgrade (or downgrade) the schema to `revision`.

        On SQLite, a migration that changes a table's columns copies it into a new table and drops
        the old one; with foreign keys enforced, that drop would delete every row referring to it
        (ON DELETE CASCADE: changing `plans` would delete every exposition). SQLite's own procedure
        is followed instead: enforcement off while migrating, the whole database checked afterwards.
        """
        sqlite = self.url.get_backend_name() == "sqlite"
        with self.engine.connect() as connection:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")  # a no-op inside a transaction: before it
                connection.commit()
            try:
                with connection.begin():
                    (command.downgrade if down else command.upgrade)(_alembic_config(connection), revision)
                    if sqlite:
                        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                        if broken:
                            raise RuntimeError(f"the migration left rows referring to nothing: {broken[:5]}")
            finally:
                if sqlite:
                    connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                    connection.commit()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: committed when the block ends, rolled back when it raises."""
        with self._sessions.begin() as session:
            yield session

    def on_commit(self, callback: Callable[[Session], None]) -> None:
        """Call `callback` with each session that commits (its data is visible to other connections then)."""
        event.listen(self._sessions, "after_commit", callback)

    def listen(self, name: str, callback: Callable[..., None]) -> None:
        """Call `callback` on the session event `name` (SQLAlchemy's: before_flush, before_commit...) of every
        session."""
        event.listen(self._sessions, name, callback)

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(connection: Any, _: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def open_store(url: str | URL) -> Store:
    store = Store(url)
    store.migrate()
    return store
