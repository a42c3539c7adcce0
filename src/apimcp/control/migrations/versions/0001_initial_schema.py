"""initial schema

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "changes",
        sa.Column("revision", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("object_id", sa.String(length=13), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("revision"),
    )
    with op.batch_alter_table("changes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_changes_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "organizations",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("prefix", sa.String(length=24), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "gateway_groups",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "name"),
    )
    with op.batch_alter_table("gateway_groups", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gateway_groups_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "gateways",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("fqdns", sa.JSON(), nullable=False),
        sa.Column("version", sa.String(length=50), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "name"),
    )
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_gateways_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "secrets",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "name"),
    )
    with op.batch_alter_table("secrets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_secrets_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "services",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("compiled", sa.LargeBinary(), nullable=False),
        sa.Column("compiled_hash", sa.String(length=64), nullable=False),
        sa.Column("operation_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "name", "version"),
    )
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_services_organization_id"), ["organization_id"], unique=False)

    op.create_table(
        "artifacts",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("service_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["service_id"], ["services.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("service_id", "name"),
    )
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_artifacts_organization_id"), ["organization_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_artifacts_service_id"), ["service_id"], unique=False)

    op.create_table(
        "plans",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("service_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("backend_endpoint", sa.Text(), nullable=True),
        sa.Column("backend_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("include", sa.JSON(), nullable=False),
        sa.Column("exclude", sa.JSON(), nullable=False),
        sa.Column("secret_id", sa.String(length=13), nullable=True),
        sa.Column("inbound", sa.JSON(), nullable=False),
        sa.Column("cache", sa.JSON(), nullable=False),
        sa.Column("artifacts", sa.JSON(), nullable=False),
        sa.Column("tool_prefix", sa.String(length=32), nullable=False),
        sa.Column("output_schemas", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["secret_id"], ["secrets.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["service_id"], ["services.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("service_id", "name"),
    )
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_plans_organization_id"), ["organization_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_plans_service_id"), ["service_id"], unique=False)

    op.create_table(
        "expositions",
        sa.Column("id", sa.String(length=13), nullable=False),
        sa.Column("organization_id", sa.String(length=13), nullable=False),
        sa.Column("plan_id", sa.String(length=13), nullable=False),
        sa.Column("group_id", sa.String(length=13), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["group_id"], ["gateway_groups.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["plan_id"], ["plans.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("organization_id", "name"),
    )
    with op.batch_alter_table("expositions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_expositions_group_id"), ["group_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_expositions_organization_id"), ["organization_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_expositions_plan_id"), ["plan_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("expositions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_expositions_plan_id"))
        batch_op.drop_index(batch_op.f("ix_expositions_organization_id"))
        batch_op.drop_index(batch_op.f("ix_expositions_group_id"))

    op.drop_table("expositions")
    with op.batch_alter_table("plans", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_plans_service_id"))
        batch_op.drop_index(batch_op.f("ix_plans_organization_id"))

    op.drop_table("plans")
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifacts_service_id"))
        batch_op.drop_index(batch_op.f("ix_artifacts_organization_id"))

    op.drop_table("artifacts")
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_services_organization_id"))

    op.drop_table("services")
    with op.batch_alter_table("secrets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_secrets_organization_id"))

    op.drop_table("secrets")
    with op.batch_alter_table("gateways", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gateways_organization_id"))

    op.drop_table("gateways")
    with op.batch_alter_table("gateway_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_gateway_groups_organization_id"))

    op.drop_table("gateway_groups")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_organization_id"))

    op.drop_table("api_tokens")
    op.drop_table("organizations")
    with op.batch_alter_table("changes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_changes_organization_id"))

    op.drop_table("changes")
