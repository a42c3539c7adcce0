"""people: users, their memberships of organizations, invitations; tokens bound to a person or a service account

`users` (a person as an identity provider names them: issuer and subject, unique together), `memberships` (a
person's role in an organization: admin, editor or viewer), `invitations` (an e-mail address invited to an
organization with a role, by a one-time code kept as its hash). `api_tokens` gets `user_id` (a token bound to a
person acts with at most the person's role and dies with the membership) and `service_account` (a named
non-person); every existing token becomes the service account of its own name.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(13), primary_key=True),
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("display_name", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_sign_in_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("issuer", "subject"),
    )
    op.create_index("ix_users_email", "users", ["email"])
    op.create_table(
        "memberships",
        sa.Column("id", sa.String(13), primary_key=True),
        sa.Column("user_id", sa.String(13), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "organization_id", sa.String(13), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("user_id", "organization_id"),
    )
    op.create_index("ix_memberships_user_id", "memberships", ["user_id"])
    op.create_index("ix_memberships_organization_id", "memberships", ["organization_id"])
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(13), primary_key=True),
        sa.Column(
            "organization_id", sa.String(13), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("invited_by", sa.String(254), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("accepted_by", sa.String(13), sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
    )
    op.create_index("ix_invitations_organization_id", "invitations", ["organization_id"])
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("user_id", sa.String(13), nullable=True))
        batch.add_column(sa.Column("service_account", sa.String(100), nullable=True))
        batch.create_foreign_key("fk_api_tokens_user_id", "users", ["user_id"], ["id"], ondelete="CASCADE")
        batch.create_index("ix_api_tokens_user_id", ["user_id"])
    op.execute(sa.text("UPDATE api_tokens SET service_account = name"))


def downgrade() -> None:
    # People's tokens have no owner without people: they go.
    op.execute(sa.text("DELETE FROM api_tokens WHERE user_id IS NOT NULL"))
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_index("ix_api_tokens_user_id")
        batch.drop_constraint("fk_api_tokens_user_id", type_="foreignkey")
        batch.drop_column("service_account")
        batch.drop_column("user_id")
    op.drop_table("invitations")
    op.drop_table("memberships")
    op.drop_table("users")
