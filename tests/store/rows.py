"""Rows made straight in the store, for tests that need one and nothing around it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.store import schema


def project_and_environment(
    session: Session, clock: Clock, environment: str = "production", *, protected: bool = False
) -> tuple[schema.Project, schema.Environment]:
    """Project ``shop`` (no repository behind it) with one environment, flushed."""
    project = schema.Project(
        slug="shop", repo_url="/nowhere", branch="main", path="nebula.toml",
        interval_seconds=60, clusters={}, created_at=clock.now(),
    )  # fmt: skip
    session.add(project)
    session.flush()
    env = schema.Environment(
        project_id=project.id, name=environment, protected=protected, created_at=clock.now()
    )
    session.add(env)
    session.flush()
    return project, env
