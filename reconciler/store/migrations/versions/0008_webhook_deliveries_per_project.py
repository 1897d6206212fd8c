"""Webhook delivery ids per project: one push to a repository two projects track polls both

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLE = "webhook_deliveries"
INDEX = "ix_webhook_deliveries_received"


def _table(name: str, *, per_project: bool) -> None:
    op.create_table(
        name,
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.PrimaryKeyConstraint(
            *(("project_id", "delivery_id") if per_project else ("delivery_id",)),
            name=f"pk_{name}",
        ),
    )


def _replace(*, per_project: bool, rows: str) -> None:
    """The table rebuilt with the other primary key (SQLite cannot change one in place)."""
    _table(f"{TABLE}_new", per_project=per_project)
    op.execute(f"INSERT INTO {TABLE}_new (project_id, delivery_id, received_at) {rows}")
    op.drop_index(INDEX, table_name=TABLE)
    op.drop_table(TABLE)
    op.rename_table(f"{TABLE}_new", TABLE)
    if op.get_bind().dialect.name == "postgresql":  # the key's index keeps its name otherwise
        op.execute(f"ALTER TABLE {TABLE} RENAME CONSTRAINT pk_{TABLE}_new TO {TABLE}_pkey")
    op.create_index(INDEX, TABLE, ["received_at"], unique=False)


def upgrade() -> None:
    _replace(per_project=True, rows=f"SELECT project_id, delivery_id, received_at FROM {TABLE}")


def downgrade() -> None:
    # One row per delivery id again: the first project that received it keeps it.
    _replace(
        per_project=False,
        rows=f"SELECT min(project_id), delivery_id, min(received_at) FROM {TABLE} "
        "GROUP BY delivery_id",
    )
