"""approvals by an administrator: the calls a policy rule sends to an admin (`approver: admin`)

A new table `approval_requests`: the call (exposition, tool, the digest of its arguments, the caller), the question
put to the admin, its status (pending, approved, refused, used), when it was made and expires, and who decided it
and when. Indexed by call (to find a call's request) and by organization and expiry (to list, count and prune).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approval_requests",
        sa.Column("id", sa.String(13), primary_key=True),
        sa.Column(
            "organization_id", sa.String(13), sa.ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("exposition_id", sa.String(13), sa.ForeignKey("expositions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("caller", sa.String(512), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_by", sa.String(254), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_approval_requests_call", "approval_requests", ["exposition_id", "tool", "digest"])
    op.create_index("ix_approval_requests_expiry", "approval_requests", ["organization_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_approval_requests_expiry", table_name="approval_requests")
    op.drop_index("ix_approval_requests_call", table_name="approval_requests")
    op.drop_table("approval_requests")
