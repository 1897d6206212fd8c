"""Policies that refuse a request at once (never queue it): freezes, suspensions and the
concurrency cap.

They apply to every path (CLI, API, Slack, pushes and change sets), so every path calls these.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from reconciler.admin import policies, projects
from reconciler.clock import Clock
from reconciler.core import freezes, messages
from reconciler.core.states import DeploymentKind
from reconciler.engine import recording
from reconciler.errors import ConcurrencyError, FrozenError, SuspendedError
from reconciler.store import schema


def check_freeze(
    session: Session, clock: Clock, environment: schema.Environment, kind: DeploymentKind | None
) -> None:
    """Protected environments refuse deploys during a freeze; rollbacks stay allowed."""
    if not environment.protected or kind is DeploymentKind.ROLLBACK:
        return
    active = freezes.active_freeze(policies.windows(session), clock.now())
    if active is not None:
        raise FrozenError(messages.frozen_until(active.ends_local, active.window.zone))


def check_concurrency(
    session: Session, project: schema.Project, starting: Iterable[int], ending: Iterable[int] = ()
) -> None:
    """Refuse when ``starting`` new deployments (unit ids) would exceed the project's cap.

    Deployments this request supersedes (``ending``: deployment ids) make room; one held
    behind a dependency still counts.
    """
    if project.concurrency is None:
        return
    ended = set(ending)
    running = [d for d in recording.running_in_project(session, project.id) if d.id not in ended]
    if len(running) + len(list(starting)) > project.concurrency:
        raise ConcurrencyError(messages.concurrency_limit(project.concurrency))


def suspension(environment: schema.Environment) -> str | None:
    """Why nothing may be applied in ``environment`` now: its project's or its own suspension."""
    found = projects.suspended(environment)
    return found.message if found is not None else None


def check_suspended(environment: schema.Environment) -> None:
    """A suspended project or environment refuses what would apply something (a change set,
    a redeploy, a promotion); rollbacks stay allowed, so they do not call this."""
    message = suspension(environment)
    if message is None:
        return
    project = environment.project
    where = (
        project.slug
        if projects.suspension_of(project)
        else f"{project.slug} --env {environment.name}"
    )
    raise SuspendedError(message, hint=f"an admin resumes it with: nebula resume {where} --as NAME")
