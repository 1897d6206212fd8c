"""Single sign-on: a token may be a session (``via`` "sso", with admin rights from the
provider's groups for that session), and sign-ins under way are remembered between sending a
person to the provider and its answer

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("via", sa.String(length=10), nullable=True))
        batch.add_column(
            sa.Column("admin_for_session", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "sign_ins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("handle", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("state", sa.String(length=100), nullable=True),
        sa.Column("secrets", sa.LargeBinary(), nullable=False),
        sa.Column("redirect_uri", sa.String(length=2000), nullable=True),
        sa.Column("next_path", sa.String(length=2000), nullable=True),
        sa.Column("interval", sa.Integer(), nullable=False),
        sa.Column("next_poll_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("handle"),
    )


def downgrade() -> None:
    op.drop_table("sign_ins")
    # Sessions mean nothing to a server without single sign-on: they end.
    op.execute("DELETE FROM api_tokens WHERE via IS NOT NULL")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("admin_for_session")
        batch.drop_column("via")
