"""People act as themselves: members' e-mail and OIDC subject, named tokens that expire, and
grants (deploy, approve) per project or environment

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("members") as batch:
        batch.add_column(sa.Column("email", sa.String(length=254), nullable=True))
        batch.add_column(sa.Column("oidc_subject", sa.String(length=255), nullable=True))
        batch.create_unique_constraint("uq_members_email", ["email"])
        batch.create_unique_constraint("uq_members_oidc_subject", ["oidc_subject"])
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("name", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("expires_at", sa.DateTime(), nullable=True))
    op.create_table(
        "grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("environment", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["members.id"]),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_grants_member", "grants", ["member_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_grants_member", table_name="grants")
    op.drop_table("grants")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
        batch.drop_column("name")
    with op.batch_alter_table("members") as batch:
        batch.drop_constraint("uq_members_oidc_subject", type_="unique")
        batch.drop_constraint("uq_members_email", type_="unique")
        batch.drop_column("oidc_subject")
        batch.drop_column("email")
    # 1.1 knew no read-only role: a viewer becomes a member who cannot sign in (their tokens
    # revoked), never one who may suddenly deploy.
    op.execute(
        "DELETE FROM api_tokens WHERE member_id IN (SELECT id FROM members WHERE role = 'viewer')"
    )
    op.execute("UPDATE members SET role = 'member' WHERE role = 'viewer'")
