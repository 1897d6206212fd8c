"""Audit events (events.action, events.target) and project removal (projects.removing_by,
projects.removing_at)

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


def upgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("action", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("target", sa.String(length=300), nullable=True))
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(sa.Column("removing_by", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("removing_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("removing_at")
        batch_op.drop_column("removing_by")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_column("target")
        batch_op.drop_column("action")
