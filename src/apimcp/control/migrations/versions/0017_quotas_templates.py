"""quotas and plan templates

Organizations gain `quota_expositions`, `quota_gateway_groups` and `quota_gateways` (how many of each they may have;
null: no limit). `plan_templates` holds an organization's named presets of plan settings (unique names per
organization), copied into plans made from them.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("quota_expositions", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("quota_gateway_groups", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("quota_gateways", sa.Integer(), nullable=True))
    op.create_table(
        "plan_templates",
        sa.Column("id", sa.String(13), primary_key=True),
        sa.Column(
            "organization_id", sa.String(13), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("organization_id", "name"),
    )
    op.create_index("ix_plan_templates_organization_id", "plan_templates", ["organization_id"])


def downgrade() -> None:
    op.drop_index("ix_plan_templates_organization_id", table_name="plan_templates")
    op.drop_table("plan_templates")
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("quota_gateways")
        batch_op.drop_column("quota_gateway_groups")
        batch_op.drop_column("quota_expositions")
