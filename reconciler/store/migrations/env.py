"""Alembic environment: migrations run on a connection handed over by ``Database.migrate``."""

from __future__ import annotations

from alembic import context

from reconciler.store.schema import Base

connection = context.config.attributes.get("connection")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things in place
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
