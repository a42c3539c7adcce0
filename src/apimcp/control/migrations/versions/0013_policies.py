"""governance: policies, guardrails and resilient backends

Plans gain `policies` (their own rules in CEL), `guardrails` (scanners on arguments and answers), `resilience`
(retries, circuit breaker, answer cache) and `fallback_endpoints` (backend URLs tried after the first);
organizations gain `policies` (rules applied before every plan's). Null means none.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.add_column(sa.Column("policies", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("guardrails", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("resilience", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("fallback_endpoints", sa.JSON(), nullable=True))
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("policies", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("policies")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_column("fallback_endpoints")
        batch_op.drop_column("resilience")
        batch_op.drop_column("guardrails")
        batch_op.drop_column("policies")
