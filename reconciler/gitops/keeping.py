"""What a new file may not change while a database holds data (behaviour.md "Data services").

A postgres database that runs as a StatefulSet keeps its data on that StatefulSet's volume; a
CloudNativePG Cluster keeps it on the operator's volumes; a redis database keeps an AOF file
nothing else reads. Switching how or what a live database runs would start an empty one in its
place, so the change is refused at staging, before any change set exists, as the project's
``configuration`` blocker: the team creates a new database and migrates instead.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.engine import releases
from reconciler.model.engines import DatabaseEngine
from reconciler.model.specs import DatabaseSpec, ProjectFile
from reconciler.store import schema


def replaced_data(session: Session, project: schema.Project, file: ProjectFile) -> str | None:
    """The message refusing ``file``, if it would replace a live database's data."""
    for env in project.environments:
        config = file.environment(env.name)
        if config is None:
            continue
        units = projects.units(session, env)
        for new in config.databases:
            unit = units.get(new.name)
            if unit is None or unit.active_release is None:
                continue
            old = releases.frozen(unit.active_release).unit
            if isinstance(old, DatabaseSpec):
                message = _replaced(env.name, old, new)
                if message is not None:
                    return message
    return None


def _replaced(env: str, old: DatabaseSpec, new: DatabaseSpec) -> str | None:
    if old.engine is not new.engine:
        return (
            f"Changing the engine of {new.name} in {env} ({old.engine} to {new.engine}) would "
            "replace its data: create a new database and migrate."
        )
    if new.engine is DatabaseEngine.POSTGRES and old.platform.postgres is not new.platform.postgres:
        return (
            f"Changing postgres in {env} would replace the data of {new.name}: create a new "
            "database and migrate."
        )
    return None
