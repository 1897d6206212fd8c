"""Notification channels: Slack, PagerDuty, Teams, e-mail and signed webhooks, each with a
scope and its events, their secrets encrypted; each outbox row names the channel it goes to
(null: the default Slack channel of the settings) and, for PagerDuty, what it is about

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notify_channels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=True),
        sa.Column("environment", sa.String(length=100), nullable=True),
        sa.Column("events", sa.String(length=100), nullable=False),
        sa.Column("target", sa.String(length=2000), nullable=False),
        sa.Column("address", sa.Text(), nullable=True),
        sa.Column("secrets", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("last_delivered_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_error_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_notify_channels_project", "notify_channels", ["project_id"], unique=False)
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("channel_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("topic", sa.String(length=200), nullable=True))
        batch.create_index("ix_outbox_channel_id", ["channel_id"], unique=False)


def downgrade() -> None:
    # Notices for other channels than the default Slack one mean nothing to 1.1.
    op.execute("DELETE FROM outbox WHERE channel_id IS NOT NULL")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_index("ix_outbox_channel_id")
        batch.drop_column("topic")
        batch.drop_column("channel_id")
    op.drop_index("ix_notify_channels_project", table_name="notify_channels")
    op.drop_table("notify_channels")
