"""token roles (admin, user, gateway) and gateway keys

Tokens get roles: only admins create gateway and admin tokens, register gateway
keys and revoke admin tokens. Every existing user token becomes an admin token:
until now a user token could already do everything an admin can (it could mint
gateway tokens), so no one loses a right they had; an organization narrows its
tokens afterwards by issuing user tokens and revoking the old ones.

gateway_keys holds the public halves of the key pairs gateways hold; snapshot
secrets are sealed to them.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(sa.text("UPDATE api_tokens SET kind = 'admin' WHERE kind = 'user'"))
    op.create_table(
        "gateway_keys",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("public_key", sa.String(length=64), nullable=False),
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "public_key"),
    )
    with op.batch_alter_table("gateway_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gateway_keys_organization_id"), ["organization_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("gateway_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gateway_keys_organization_id"))
    op.drop_table("gateway_keys")
    # Admins become the user tokens they were (a user token could do everything before 0003).
    op.execute(sa.text("UPDATE api_tokens SET kind = 'user' WHERE kind = 'admin'"))
