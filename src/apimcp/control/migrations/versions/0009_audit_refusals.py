"""audit refusals: events of refused requests are kept apart from those of answered ones

`audit_events` gains `refusal` (an event whose HTTP status is 400 or more: 401, 403, 429), set for the events
already kept, and an index on (organization, refusal, id) for keeping the newest of each apart.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_BATCH = 500


def _is_refusal(event: object) -> bool:
    """As `apimcp.audit.events.is_refusal` says today (a migration keeps its own copy of the rule)."""
    status = event.get("status") if isinstance(event, dict) else None
    return isinstance(status, int) and not isinstance(status, bool) and status >= 400


def upgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("refusal", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.create_index("ix_audit_events_trail", ["organization_id", "refusal", "id"], unique=False)
    events = sa.table("audit_events", sa.column("id", sa.Integer()), sa.column("event", sa.JSON()),
                      sa.column("refusal", sa.Boolean()))  # fmt: skip
    connection = op.get_bind()
    refused = [row.id for row in connection.execute(sa.select(events.c.id, events.c.event)) if _is_refusal(row.event)]
    for start in range(0, len(refused), _BATCH):
        chosen = refused[start : start + _BATCH]
        connection.execute(sa.update(events).where(events.c.id.in_(chosen)).values(refusal=True))


def downgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_events_trail")
        batch_op.drop_column("refusal")
