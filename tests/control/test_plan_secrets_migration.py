"""Migration 0004: each plan's single secret becomes its first backend secret, and back on downgrade."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from apimcp.control.store import Store

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _migrate(store: Store, revision: str, *, down: bool = False) -> None:
    store.migrate_to(revision, down=down)


def _seed(store: Store) -> None:
    """An organization, a secret, a service, two plans (one with the secret) and their expositions, at 0002."""
    rows = [
        ("INSERT INTO organizations (id, name, created_at) VALUES ('org', 'acme', :now)", {}),
        ("INSERT INTO secrets (id, organization_id, name, kind, fields, sealed, created_at, updated_at) "
         "VALUES ('sec', 'org', 'key', 'api_key', '{\"name\": \"X-Key\"}', 'sealed', :now, :now)", {}),
        ("INSERT INTO services (id, organization_id, name, version, kind, compiled, compiled_hash, operation_count, "
         "created_at, updated_at) VALUES ('svc', 'org', 'echo', '1', 'openapi', :blob, 'h', 0, :now, :now)",
         {"blob": b"{}"}),
    ]  # fmt: skip
    for name, secret in (("with", "'sec'"), ("without", "NULL")):
        rows.append(
            (
                "INSERT INTO plans (id, organization_id, service_id, name, backend_timeout_ms, include, exclude, "
                f"secret_id, inbound, cache, artifacts, tool_prefix, output_schemas, created_at, updated_at) VALUES "
                f"('{name}', 'org', 'svc', '{name}', 1000, '[]', '[]', {secret}, '{{}}', '{{}}', '[]', '', "
                "true, :now, :now)",
                {},
            )
        )
    rows.append(("INSERT INTO gateway_groups (id, organization_id, name, labels, created_at) "
                 "VALUES ('grp', 'org', 'default', '{}', :now)", {}))  # fmt: skip
    rows += [
        (f"INSERT INTO expositions (id, organization_id, plan_id, group_id, created_at) "
         f"VALUES ('e-{name}', 'org', '{name}', 'grp', :now)", {})
        for name in ("with", "without")
    ]  # fmt: skip
    with store.engine.begin() as connection:
        for statement, values in rows:
            connection.execute(text(statement), {"now": NOW, **values})


def _secret_ids(store: Store, plan: str) -> list[str]:
    with store.engine.connect() as connection:
        query = text("SELECT secret_id FROM plan_secrets WHERE plan_id = :plan ORDER BY position")
        return list(connection.execute(query, {"plan": plan}).scalars())


def _expositions(store: Store) -> list[str]:
    with store.engine.connect() as connection:
        return sorted(connection.execute(text("SELECT plan_id FROM expositions")).scalars())


def test_a_plan_s_secret_becomes_its_first_backend_secret_and_comes_back_on_downgrade(database_url: str) -> None:
    """And the expositions survive (on SQLite, changing `plans` recreates it: ON DELETE CASCADE would fire)."""
    store = Store(database_url)
    try:
        _migrate(store, "0002")
        _seed(store)
        _migrate(store, "0004")
        assert _expositions(store) == ["with", "without"]
        assert _secret_ids(store, "with") == ["sec"]  # read in SQL: the models are those of the newest revision
        assert _secret_ids(store, "without") == []
        with store.engine.begin() as connection:
            connection.execute(
                text("INSERT INTO secrets (id, organization_id, name, kind, fields, sealed, created_at, updated_at) "
                     "VALUES ('sec2', 'org', 'id', 'api_key', '{}', 'sealed', :now, :now)"), {"now": NOW}
            )  # fmt: skip
            connection.execute(
                text("INSERT INTO plan_secrets (plan_id, secret_id, position) VALUES ('with', 'sec2', 1)")
            )
        _migrate(store, "0002", down=True)
        with store.engine.connect() as connection:
            kept = dict(connection.execute(text("SELECT id, secret_id FROM plans")).all())
        assert kept == {"with": "sec", "without": None}  # the first secret of each plan
        assert _expositions(store) == ["with", "without"]
    finally:
        store.dispose()
