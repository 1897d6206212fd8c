"""Suspending and resuming a project or one environment (``nebula suspend|resume``).

An admin or owner suspends, with a reason, e.g. during an incident. While suspended, polls
still run and stage change sets, but nothing is applied: each stays ``draft`` with the note
``Suspended by alice at 2026-12-01 10:00 UTC: <reason>`` (``applying``'s first check), no
approval is requested, ``changeset apply``, redeploy and promote are refused with that message
(``guards.check_suspended``), and self-heal stops (``engine.drifting``); rollbacks stay
allowed and deployments already in flight finish. Resuming lets the newest draft change set
that the suspension held go on by the normal rules (``proceeding.proceed``). Both are events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core import rights
from reconciler.core.rights import Principal
from reconciler.core.states import ChangeSetState
from reconciler.errors import ConfigurationError, ConflictError
from reconciler.requests import proceeding
from reconciler.store import events, schema

HELD = "Suspended by "  # how the note of a change set a suspension held begins
MAX_REASON = 2000


@dataclass
class Outcome:
    """What a suspend or resume did: the row it changed, and (resume) what went on."""

    project: schema.Project
    environment: schema.Environment | None
    # each change set that went on, with the approval it now waits for (if any)
    went_on: list[tuple[schema.ChangeSet, schema.Approval | None]] = field(default_factory=list)

    @property
    def target(self) -> schema.Project | schema.Environment:
        return self.environment if self.environment is not None else self.project

    @property
    def where(self) -> str:
        env = self.environment
        return f"{self.project.slug}/{env.name}" if env is not None else self.project.slug


def _target(session: Session, slug: str, env_name: str | None, who: Principal) -> Outcome:
    rights.require_admin(who, "suspend or resume projects")
    project = projects.get(session, slug)
    env = projects.environment(session, project, env_name) if env_name is not None else None
    return Outcome(project, env)


def suspend(
    session: Session, ctx: Context, slug: str, env_name: str | None, reason: str, who: Principal
) -> Outcome:
    """Suspend ``slug`` (or its environment ``env_name``) as ``who``, an admin or owner."""
    outcome = _target(session, slug, env_name, who)
    actor = who.name
    text = " ".join(reason.split())
    if not text:
        raise ConfigurationError(
            "a suspension needs a reason", hint='e.g. --reason "incident 42: payments down"'
        )
    if len(text) > MAX_REASON:
        raise ConfigurationError(f"the reason is longer than {MAX_REASON} characters")
    row = outcome.target
    current = projects.suspension_of(row)
    if current is not None:
        raise ConflictError(
            f"{outcome.where} is already suspended ({current.message})",
            hint=f"resume it first: nebula resume {_args(outcome)} --as NAME",
        )
    row.suspended_by, row.suspended_at, row.suspended_reason = actor, ctx.clock.now(), text
    events.suspension(
        session,
        ctx.clock.now(),
        row,
        f"Suspended {outcome.where}: {text}",
        actor=actor,
        suspended=True,
    )
    return outcome


def resume(
    session: Session, ctx: Context, slug: str, env_name: str | None, who: Principal
) -> Outcome:
    """Resume ``slug`` (or one environment) as ``who``; in each environment no longer held,
    the newest draft change set the suspension held goes on by the normal rules."""
    outcome = _target(session, slug, env_name, who)
    row = outcome.target
    if projects.suspension_of(row) is None:
        held = projects.suspended(outcome.environment) if outcome.environment else None
        extra = f" (its project is: {held.message})" if held is not None else ""
        raise ConflictError(f"{outcome.where} is not suspended{extra}")
    row.suspended_by = row.suspended_at = row.suspended_reason = None
    events.suspension(
        session, ctx.clock.now(), row, f"Resumed {outcome.where}", actor=who.name, suspended=False
    )
    session.flush()
    environments = [outcome.environment] if outcome.environment else outcome.project.environments
    for env in environments:
        if env is None or projects.suspended(env) is not None:
            continue  # still held (its project, or its own suspension)
        newest = session.scalars(
            select(schema.ChangeSet)
            .where(
                schema.ChangeSet.environment_id == env.id,
                schema.ChangeSet.state == ChangeSetState.DRAFT.value,
            )
            .order_by(schema.ChangeSet.id.desc())
            .limit(1)
        ).first()
        if newest is not None and (newest.note or "").startswith(HELD):
            applied = proceeding.proceed(session, ctx, newest, requester=newest.owner)
            outcome.went_on.append((newest, applied.approval if applied is not None else None))
    return outcome


def _args(outcome: Outcome) -> str:
    env = outcome.environment
    return f"{outcome.project.slug} --env {env.name}" if env is not None else outcome.project.slug
