"""rate limits: plans say how many requests their exposition and each caller may make

Plans gain `rate_limit` (NULL: no limit), `{exposition: {requests, per_seconds, burst}, caller: {...}}`.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rate_limit", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("rate_limit")
