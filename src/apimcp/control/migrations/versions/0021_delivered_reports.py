"""delivered_reports: the ids of gateways' reports already kept

A gateway whose report (audit events, traffic counts) timed out sends the same report again, with the same id: a
report the control plane had kept before its answer was lost is then not kept twice. Ids are kept a day.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delivered_reports",
        sa.Column("report", sa.String(64), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_delivered_reports_at", "delivered_reports", ["at"])


def downgrade() -> None:
    op.drop_index("ix_delivered_reports_at", table_name="delivered_reports")
    op.drop_table("delivered_reports")
