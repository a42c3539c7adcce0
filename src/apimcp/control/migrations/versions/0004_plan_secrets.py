"""plan_secrets: a plan carries several backend secrets (plans.secret_id moves there)

An operation may need two credentials at once (an API key and a client id in
two headers). Each plan's secret becomes its first row in `plan_secrets`;
downgrading keeps the first secret of each plan only.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    pairs = bind.execute(sa.text("SELECT id, secret_id FROM plans WHERE secret_id IS NOT NULL")).all()
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("secret_id")
    plan_secrets = op.create_table(
        "plan_secrets",
        sa.Column("plan_id", sa.String(length=13), nullable=False),
        sa.Column("secret_id", sa.String(length=13), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["plan_id"], ["plans.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["secret_id"], ["secrets.id"], ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("plan_id", "secret_id"),
    )
    with op.batch_alter_table("plan_secrets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_plan_secrets_secret_id"), ["secret_id"], unique=False)
    if pairs:
        op.bulk_insert(plan_secrets, [{"plan_id": p, "secret_id": s, "position": 0} for p, s in pairs])


def downgrade() -> None:
    bind = op.get_bind()
    first = bind.execute(sa.text("SELECT plan_id, secret_id FROM plan_secrets WHERE position = 0")).all()
    with op.batch_alter_table("plan_secrets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_plan_secrets_secret_id"))
    op.drop_table("plan_secrets")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("secret_id", sa.String(length=13), nullable=True))
        batch_op.create_foreign_key("fk_plans_secret_id_secrets", "secrets", ["secret_id"], ["id"],
                                    ondelete="RESTRICT")  # fmt: skip
    for plan_id, secret_id in first:
        bind.execute(sa.text("UPDATE plans SET secret_id = :s WHERE id = :p"), {"s": secret_id, "p": plan_id})
