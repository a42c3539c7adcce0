"""pinned definitions: what an MCP server changed since it was imported is held beside what is served

Services gain `pending_compiled` (the upstream's catalog now), its `pending_hash`, and `pending_changes` (what
differs, tool by tool), all empty unless an MCP server changed its tools and no admin has accepted it yet. Plans
gain `trust_changes`: a plan that trusts its MCP server serves what it lists now, held or not.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pending_compiled", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("pending_changes", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("pending_hash", sa.String(64), nullable=True))
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trust_changes", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("trust_changes")
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.drop_column("pending_hash")
        batch_op.drop_column("pending_changes")
        batch_op.drop_column("pending_compiled")
