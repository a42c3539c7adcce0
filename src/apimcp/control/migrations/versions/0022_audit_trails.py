"""audit_events.kept_as: which of an organization's trails keeps an event, each with a retention of its own

Refusals had a retention of their own; every other event shared one, so a flood of cheap requests (pings, tool
lists, or tool calls on an open exposition) pushed out approvals and guardrail findings. Now four trails:
refused, routine (listing, pinging), decided (approvals, guardrail findings) and answered (every other request).
Events kept before this revision are refused or answered, as their `refusal` flag says.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kept_as", sa.String(16), nullable=False, server_default="answered"))
    events = sa.table("audit_events", sa.column("refusal", sa.Boolean()), sa.column("kept_as", sa.String(16)))
    op.execute(events.update().where(events.c.refusal == sa.true()).values(kept_as="refused"))
    op.create_index("ix_audit_events_kept_as", "audit_events", ["organization_id", "kept_as", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_events_kept_as", table_name="audit_events")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_column("kept_as")
