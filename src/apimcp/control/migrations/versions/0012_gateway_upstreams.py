"""what each gateway says of the MCP servers it fronts: whether each service's server answers

Gateways gain `upstreams` (service id -> up, failing or unknown, as the gateway last reported it).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.add_column(sa.Column("upstreams", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.drop_column("upstreams")
