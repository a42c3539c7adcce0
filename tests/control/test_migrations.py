"""The migrations build exactly the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Integer, MetaData, Table, inspect, text

from apimcp.control.domain import orgs
from apimcp.control.models import Base
from apimcp.control.store import MIGRATIONS, Store, open_store


def _differences(store: Store, metadata: MetaData) -> list[object]:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, metadata))


def _head() -> str:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


def test_the_migrated_schema_matches_the_models(database_url: str) -> None:
    store = open_store(database_url)
    try:
        assert _differences(store, Base.metadata) == []
        tables = set(inspect(store.engine).get_table_names())
        assert tables == set(Base.metadata.tables) | {"alembic_version"}
    finally:
        store.dispose()


def test_the_comparison_sees_a_difference(database_url: str) -> None:
    """The check above is live: a model the migrations lack shows up."""
    store = open_store(database_url)
    try:
        extended = MetaData()
        for table in Base.metadata.tables.values():
            table.to_metadata(extended)
        Table("not_migrated", extended, Column("id", Integer, primary_key=True))
        differences = _differences(store, extended)
        assert [d[0] for d in differences] == ["add_table"]  # type: ignore[index]
        assert differences[0][1].name == "not_migrated"  # type: ignore[index]
    finally:
        store.dispose()


def test_the_database_is_at_the_newest_revision(database_url: str) -> None:
    store = open_store(database_url)
    try:
        with store.engine.connect() as connection:
            assert MigrationContext.configure(connection).get_current_revision() == _head()
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [_head()]
    finally:
        store.dispose()


def test_migrating_again_is_harmless(database_url: str) -> None:
    store = open_store(database_url)
    try:
        with store.session() as session:
            organization_id = orgs.create(session, "acme").id
        store.migrate()
    finally:
        store.dispose()
    reopened = open_store(database_url)
    try:
        reopened.migrate()
        with reopened.session() as session:
            assert orgs.by_name(session, "acme").id == organization_id
        assert _differences(reopened, Base.metadata) == []
        with reopened.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    finally:
        reopened.dispose()


def test_the_store_picks_the_driver_and_integrity_settings(database_url: str) -> None:
    store = open_store(database_url)
    try:
        backend = store.url.get_backend_name()
        assert backend in ("sqlite", "postgresql")
        if backend == "postgresql":
            assert store.url.drivername == "postgresql+psycopg"
        else:
            with store.engine.connect() as connection:
                assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
                assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    finally:
        store.dispose()


def _at(store: Store, revision: str, *, down: bool = False) -> None:
    store.migrate_to(revision, down=down)


def test_upgrading_from_0001_on_sqlite_deleted_every_exposition(database_url: str) -> None:
    """0002 changes `plans`, which SQLite does by recreating the table: with foreign keys enforced while
    migrating, dropping the old table deleted every exposition (ON DELETE CASCADE) and, with it, nothing
    said so. Migrations now run with enforcement off and the database is checked afterwards."""
    store = Store(database_url)
    try:
        _at(store, "0001")
        now = {"now": "2026-01-01 00:00:00"}
        with store.engine.begin() as connection:
            for statement in (
                "INSERT INTO organizations (id, name, created_at) VALUES ('o', 'acme', :now)",
                "INSERT INTO services (id, organization_id, name, version, kind, compiled, compiled_hash, "
                "operation_count, created_at, updated_at) VALUES ('s', 'o', 'echo', '1', 'openapi', '{}', 'h', 0, "
                ":now, :now)",
                "INSERT INTO plans (id, organization_id, service_id, name, backend_timeout_ms, include, exclude, "
                "inbound, cache, artifacts, tool_prefix, output_schemas, created_at, updated_at) VALUES ('p', 'o', "
                "'s', 'p', 1000, '[]', '[]', '{}', '{}', '[]', '', true, :now, :now)",
                "INSERT INTO gateway_groups (id, organization_id, name, labels, created_at) "
                "VALUES ('g', 'o', 'default', '{}', :now)",
                "INSERT INTO expositions (id, organization_id, plan_id, group_id, created_at) "
                "VALUES ('e', 'o', 'p', 'g', :now)",
            ):
                connection.execute(text(statement), now)
        _at(store, "head")
        with store.engine.connect() as connection:
            assert connection.execute(text("SELECT id FROM expositions")).scalars().all() == ["e"]
            assert connection.execute(text("SELECT id FROM plans")).scalars().all() == ["p"]
    finally:
        store.dispose()


def test_migration_0003_makes_existing_user_tokens_admins(database_url: str) -> None:
    """Before roles a user token could do everything (mint gateway tokens): 0003 keeps what it could do."""
    store = Store(database_url)
    try:
        _at(store, "0002")
        with store.engine.begin() as connection:
            now = "2026-01-01 00:00:00"
            organization = text("INSERT INTO organizations (id, name, created_at) VALUES ('o1', 'acme', :now)")
            connection.execute(organization, {"now": now})
            token = text(
                "INSERT INTO api_tokens (id, organization_id, name, kind, prefix, token_hash, created_at) "
                "VALUES (:id, 'o1', :id, :kind, 'p', :hash, :now)"
            )
            for token_id, kind in (("t1", "user"), ("t2", "gateway")):
                connection.execute(token, {"id": token_id, "kind": kind, "hash": token_id * 32, "now": now})
        _at(store, "head")
        with store.engine.connect() as connection:
            kinds = dict(connection.execute(text("SELECT id, kind FROM api_tokens ORDER BY id")).all())
        assert kinds == {"t1": "admin", "t2": "gateway"}
        assert "gateway_keys" in inspect(store.engine).get_table_names()
        _at(store, "0002", down=True)
        with store.engine.connect() as connection:
            kinds = dict(connection.execute(text("SELECT id, kind FROM api_tokens ORDER BY id")).all())
        assert kinds == {"t1": "user", "t2": "gateway"}
        assert "gateway_keys" not in inspect(store.engine).get_table_names()
    finally:
        store.dispose()
