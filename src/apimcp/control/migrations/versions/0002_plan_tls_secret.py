"""plans.tls_secret_id: TLS settings (CA, client certificate) for the backend

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tls_secret_id", sa.String(length=13), nullable=True))
        batch_op.create_foreign_key("fk_plans_tls_secret_id_secrets", "secrets", ["tls_secret_id"], ["id"],
                                    ondelete="RESTRICT")  # fmt: skip


def downgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_constraint("fk_plans_tls_secret_id_secrets", type_="foreignkey")
        batch_op.drop_column("tls_secret_id")
