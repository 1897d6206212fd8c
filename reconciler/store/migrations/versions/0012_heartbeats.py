"""Heartbeats: when a reconcile pass last ran (``nebula serve``'s scheduler or ``nebula
reconcile``), so ``status``, ``wait`` and the page can say when nothing is reconciling

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 12:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "heartbeats",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("owner", sa.String(100), nullable=False),
        sa.Column("beat_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("heartbeats")
