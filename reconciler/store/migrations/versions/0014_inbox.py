"""The members' inbox: which items each member has read (the items are read from the
approvals and deployments that caused them), and indexes to find a member's own requests

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 08:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inbox_reads",
        sa.Column("member", sa.String(length=100), nullable=False),
        sa.Column("item", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("read_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.PrimaryKeyConstraint("member", "item"),
    )
    op.create_index("ix_inbox_reads_project", "inbox_reads", ["project_id"], unique=False)
    op.create_index(
        "ix_deployments_requester", "deployments", ["requested_by", "state"], unique=False
    )
    op.create_index("ix_approvals_requester", "approvals", ["requested_by", "state"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_approvals_requester", table_name="approvals")
    op.drop_index("ix_deployments_requester", table_name="deployments")
    op.drop_index("ix_inbox_reads_project", table_name="inbox_reads")
    op.drop_table("inbox_reads")
