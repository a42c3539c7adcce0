"""identity: plans choose a header policy and an audit trail; gateways report audit events

Plans gain `header_policy` (NULL: the defaults) and `audit` (false). OAuth settings live in the existing
`inbound` JSON and need no column. `audit_events` keeps what gateways report, newest last, for the
control plane to show.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("header_policy", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("audit", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("exposition_id", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("event", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_events_organization_id"), ["organization_id"], unique=False)


def downgrade() -> None:
    op.drop_table("audit_events")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("audit")
        batch_op.drop_column("header_policy")
