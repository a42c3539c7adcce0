"""task mode and tool search: plans say when tool calls become tasks, and whether to list tools or search them

Plans gain `tasks` (NULL: off), the mode text `apimcp.protocol.tasks.policy` reads ("all" or "slow:1s"), and
`tool_search` (false: list every tool).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tasks", sa.String(32), nullable=True))
        batch_op.add_column(sa.Column("tool_search", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("tool_search")
        batch_op.drop_column("tasks")
