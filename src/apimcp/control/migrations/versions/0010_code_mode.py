"""code mode: plans say whether an exposition lists search_tools, describe_tools and execute_code

Plans gain `code_mode`: "off" (the default), "on", or "read_only" (programs call only tools that change nothing).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("code_mode", sa.String(16), nullable=False, server_default="off"))


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("code_mode")
