"""Live state: drift checks on units, suspensions of projects and environments

Revision ID: 0007
Revises: 0002
Create Date: 2026-12-01 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
# 0001 as the task said; chained after main's head (0002) when main was merged in: one head.
down_revision = "0002"
branch_labels = None
depends_on = None

SUSPENDED = ("suspended_by", "suspended_at", "suspended_reason")
UNIT = ("sync", "drift", "drift_checked_at", "drift_since", "sync_blocker", "sync_message")


def _suspension() -> list[sa.Column[object]]:
    return [
        sa.Column("suspended_by", sa.String(length=100), nullable=True),
        sa.Column("suspended_at", sa.DateTime(), nullable=True),
        sa.Column("suspended_reason", sa.Text(), nullable=True),
    ]


def upgrade() -> None:
    for table in ("projects", "environments"):
        with op.batch_alter_table(table) as batch:
            for column in _suspension():
                batch.add_column(column)
    with op.batch_alter_table("units") as batch:
        batch.add_column(sa.Column("sync", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("drift", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("drift_checked_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("drift_since", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("sync_blocker", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("sync_message", sa.Text(), nullable=True))
        batch.create_index("ix_units_drift_checked", ["drift_checked_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("units") as batch:
        batch.drop_index("ix_units_drift_checked")
        for name in UNIT:
            batch.drop_column(name)
    for table in ("environments", "projects"):
        with op.batch_alter_table(table) as batch:
            for name in SUSPENDED:
                batch.drop_column(name)
