"""``INSERT ... ON CONFLICT DO NOTHING`` in the store's own dialect (SQLite or PostgreSQL):
for rows two transactions may add at once (a member marking an item read in two terminals),
where the second should find the first's row, not fail.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from reconciler.store.base import Base


def add_new(session: Session, model: type[Base], keys: list[str], **values: Any) -> None:
    """Add a row of ``model`` unless one with the same ``keys`` (its primary key or a unique
    constraint's columns) exists already, even one another transaction just added."""
    module = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = module.insert(model).values(**values)
    session.execute(statement.on_conflict_do_nothing(index_elements=keys))
