"""Alembic migrations of the control plane's schema (run with `apimcp.control.store.migrate`)."""
