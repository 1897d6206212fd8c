"""Resolved values and promotion gates: a change-set line's ``via``; environments'
``promote_from``, ``soak`` and ``self_heal``; a change set's gate; an approval's evidence.

Revision ID: 0002
Revises: 0005 (revisions are chained in the order their work landed: 0001, 0004, 0005, 0002)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("changeset_lines") as batch:
        batch.add_column(sa.Column("via", sa.String(length=300), nullable=True))
    with op.batch_alter_table("environments") as batch:
        batch.add_column(sa.Column("promote_from", sa.String(length=40), nullable=True))
        batch.add_column(
            sa.Column("soak_seconds", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("self_heal", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("changesets") as batch:
        batch.add_column(sa.Column("gate_environment", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("gate_soak_seconds", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("gate_state", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("gate_message", sa.Text(), nullable=True))
        batch.create_index("ix_changesets_gate", ["state", "gate_state"], unique=False)
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("evidence", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("evidence")
    with op.batch_alter_table("changesets") as batch:
        batch.drop_index("ix_changesets_gate")
        batch.drop_column("gate_message")
        batch.drop_column("gate_state")
        batch.drop_column("gate_soak_seconds")
        batch.drop_column("gate_environment")
    with op.batch_alter_table("environments") as batch:
        batch.drop_column("self_heal")
        batch.drop_column("soak_seconds")
        batch.drop_column("promote_from")
    with op.batch_alter_table("changeset_lines") as batch:
        batch.drop_column("via")
