"""Bringing the schema to a revision with Alembic: loaded by name (``Database.MIGRATING``)
only when the store is behind, since Alembic and its script directory cost a command that
only reads a tenth of a second."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def config() -> Config:
    made = Config()
    made.set_main_option("script_location", str(MIGRATIONS))
    return made


def head() -> str:
    """The newest revision of the migrations (``database.HEAD`` must say the same)."""
    found = ScriptDirectory.from_config(config()).get_current_head()
    assert found is not None
    return found


def upgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as connection:
        made = config()
        made.attributes["connection"] = connection
        command.upgrade(made, revision)
