"""policies: rules in CEL that decide calls, filter listings and redact answers (`apimcp.policies`)

Plans gain `policies` (their own rules) and organizations `policies` (rules applied before every plan's).
Both are lists of rule objects; null means none.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("policies", sa.JSON(), nullable=True))
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("policies", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("policies")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("policies")
