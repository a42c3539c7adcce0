"""artifact kinds: attached files are validated documents (kind, capabilities, document)

Attached artifacts become documents of four kinds (Prompts, Resources, CustomTools,
ToolsOutputFilters), validated when attached, so that snapshots carry the stored
`document` and never parse a file. Files attached before were never interpreted; each
is read again here with the attach-time reading (`apimcp.artifacts.documents`) and,
when it is a valid document for its own service, gets its kind, capabilities and
document. The others keep kind NULL: they stay listed, snapshots leave them out, and
attaching a fixed file under the same name fills them in. References to the service's
tools are not checked here (that needs every compiled service): the gateway ignores a
reference that does not resolve, as it must after any re-import anyway. Downgrading
drops the three columns.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_artifacts = sa.table(
    "artifacts",
    sa.column("id", sa.String),
    sa.column("kind", sa.String),
    sa.column("capabilities", sa.JSON),
    sa.column("document", sa.JSON),
)


def upgrade() -> None:
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("capabilities", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("document", sa.JSON(), nullable=True))
    bind = op.get_bind()
    bind.execute(_artifacts.update().values(capabilities=[]))
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.alter_column("capabilities", existing_type=sa.JSON(), nullable=False)
    _read_attached(bind)


def _read_attached(bind: sa.Connection) -> None:
    """Give every attached file that reads as a valid document of its service its kind, one file in memory at
    a time."""
    from apimcp.artifacts.documents import ArtifactError, read_document  # noqa: PLC0415 - only when migrating

    ids = bind.execute(sa.text("SELECT id FROM artifacts WHERE role = 'attached'")).scalars().all()
    for artifact_id in ids:
        row = bind.execute(
            sa.text(
                "SELECT a.name, a.content, s.name, s.version FROM artifacts a JOIN services s ON s.id = a.service_id "
                "WHERE a.id = :id"
            ),
            {"id": artifact_id},
        ).one()
        name, content, service_name, service_version = row
        try:
            document = read_document(bytes(content), name)
        except ArtifactError:
            continue
        if (document.service_name, document.service_version) != (service_name, service_version):
            continue
        bind.execute(
            _artifacts.update()
            .where(_artifacts.c.id == artifact_id)
            .values(kind=document.kind, capabilities=list(document.capabilities), document=dict(document.body))
        )


def downgrade() -> None:
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.drop_column("document")
        batch_op.drop_column("capabilities")
        batch_op.drop_column("kind")
