"""traffic: what gateways counted of their expositions' requests, by minute and, rolled up, by hour

A new table `traffic_counts`: per organization, exposition, method, tool and period (a minute or an hour), the
number of requests, how they ended, and histograms of their latency and of the time spent on backends.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "traffic_counts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("organization_id", sa.String(13), nullable=False),
        sa.Column("exposition_id", sa.String(64), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seconds", sa.Integer(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("outcomes", sa.JSON(), nullable=False),
        sa.Column("latency", sa.JSON(), nullable=False),
        sa.Column("backend", sa.JSON(), nullable=False),
        sa.UniqueConstraint("organization_id", "exposition_id", "method", "tool", "start", "seconds"),
    )
    op.create_index("ix_traffic_counts_window", "traffic_counts", ["organization_id", "start"])


def downgrade() -> None:
    op.drop_index("ix_traffic_counts_window", table_name="traffic_counts")
    op.drop_table("traffic_counts")
