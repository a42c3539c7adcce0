"""api_tokens.roams: whether a person's token acts in the person's other organizations too

Only a token the person got by signing in (or by joining with an invitation's code alone) does (`X-Organization`).
A token an admin issued for a member acts only in the organization that issued it: the admin of one organization
must not get a key to the others the member belongs to. Tokens made before this revision do not roam: a person
signs in again to work in another organization.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("roams", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("roams")
