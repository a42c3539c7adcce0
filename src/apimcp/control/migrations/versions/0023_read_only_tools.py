"""plans.read_only_tools: the tools a plan holds read-only, whatever the description or the MCP server claims

A tool of an MCP server that claimed readOnlyHint while it writes was believed by read-only code mode, the policies'
`tool.read_only`, approvals of tools that are not read-only and the answer cache. A plan may now name its read-only
tools itself (patterns, as `include`'s); null keeps the claims.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("read_only_tools", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("read_only_tools")
