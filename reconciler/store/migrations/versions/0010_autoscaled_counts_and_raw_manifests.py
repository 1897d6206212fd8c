"""Autoscaled counts and raw manifests: each autoscaled process's replicas as the last drift
check saw them; the raw manifest files a change set's file named, and the environment's recorded
ones

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("units") as batch:
        batch.add_column(sa.Column("scaled", sa.JSON(), nullable=True))
    with op.batch_alter_table("changesets") as batch:
        batch.add_column(sa.Column("manifest_files", sa.JSON(), nullable=True))
    with op.batch_alter_table("environments") as batch:
        batch.add_column(sa.Column("recorded_manifests", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("environments") as batch:
        batch.drop_column("recorded_manifests")
    with op.batch_alter_table("changesets") as batch:
        batch.drop_column("manifest_files")
    with op.batch_alter_table("units") as batch:
        batch.drop_column("scaled")
