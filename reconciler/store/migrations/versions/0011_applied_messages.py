"""Applied messages: what the person who applied a change set said about it
(``nebula changeset apply ID --message TEXT``)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("changesets") as batch:
        batch.add_column(sa.Column("applied_message", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("changesets") as batch:
        batch.drop_column("applied_message")
