"""Alembic environment: migrations run on the connection the store hands over."""

from __future__ import annotations

from alembic import context

from apimcp.control.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through apimcp.control.store.migrate")
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
