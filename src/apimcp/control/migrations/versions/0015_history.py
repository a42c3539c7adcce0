"""history: a version of each service, artifact, plan, exposition, secret and organization after each change

A new table `versions`: per organization, object kind and id, numbered versions holding who made the change (the
API token's id, name and role), when, the action (created, updated, deleted, rolled back) and the object's state
as JSON (never a secret's values).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("organization_id", sa.String(13), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("object_id", sa.String(13), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("object_name", sa.String(200), nullable=True),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("restored_from", sa.Integer(), nullable=True),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("actor_token_id", sa.String(13), nullable=True),
        sa.Column("actor_name", sa.String(100), nullable=True),
        sa.Column("actor_role", sa.String(16), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("organization_id", "kind", "object_id", "number"),
    )
    op.create_index("ix_versions_trail", "versions", ["organization_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_versions_trail", table_name="versions")
    op.drop_table("versions")
