"""Forge webhooks: repository URLs with credentials stored encrypted, a rate limit for
unsigned push notifications, and an index to prune old delivery ids.

Revision ID: 0004
Revises: 0001
Create Date: 2026-12-07 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repo_url_encrypted", sa.LargeBinary(), nullable=True))
        batch_op.add_column(
            sa.Column("webhook_limit_seconds", sa.Integer(), server_default="10", nullable=False)
        )
        batch_op.add_column(sa.Column("webhook_polled_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_deliveries_received", ["received_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_received")
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("webhook_polled_at")
        batch_op.drop_column("webhook_limit_seconds")
        batch_op.drop_column("repo_url_encrypted")
