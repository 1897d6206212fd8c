"""A new valid nebula.toml at a new commit -> one change set per environment that changed.

Environments and units rows are kept in step with the file here. A newer push replaces the
project's older unapplied change set for an environment; an environment with no line gets no
change set. Unprotected environments apply at once (unless a touched service has
``auto_deploy = false``); protected ones request approval at once, since a push is an action
that starts a deployment there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import members
from reconciler.context import Context
from reconciler.core import messages, planning
from reconciler.core.states import ChangeSetState, ServiceStatus
from reconciler.engine import releases
from reconciler.errors import InvalidFileError
from reconciler.model import validation
from reconciler.model.specs import EnvironmentConfig, ProjectFile
from reconciler.requests import applying, changesets
from reconciler.store import events, schema


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    message: str
    committed_at: datetime | None = None

    @property
    def short(self) -> str:
        return self.sha[:7]


def sync_environments(
    session: Session, ctx: Context, project: schema.Project, file: ProjectFile
) -> list[schema.Environment]:
    existing = {e.name: e for e in project.environments}
    out = []
    for position, spec in enumerate(file.environments):
        env = existing.get(spec.name)
        if env is None:
            env = schema.Environment(
                project_id=project.id,
                name=spec.name,
                position=position,
                protected=spec.protected,
                created_at=ctx.clock.now(),
            )
            session.add(env)
            project.environments.append(env)
        env.protected = spec.protected
        env.position = position
        env.in_file = True
        out.append(env)
    for name, env in existing.items():
        if file.environment(name) is None:
            env.in_file = False
    session.flush()
    return out


def recorded_config(env: schema.Environment) -> EnvironmentConfig | None:
    """The last file applied to ``env``, as that environment's configuration."""
    if not env.recorded_file:
        return None
    try:
        return validation.load(env.recorded_file).environment(env.name)
    except InvalidFileError:
        return None


def units_of(session: Session, env: schema.Environment) -> dict[str, schema.Unit]:
    rows = session.scalars(select(schema.Unit).where(schema.Unit.environment_id == env.id))
    return {u.name: u for u in rows if u.status != ServiceStatus.REMOVED.value}


def stage(
    session: Session, ctx: Context, project: schema.Project, commit: Commit, file: ProjectFile
) -> list[schema.ChangeSet]:
    """Stage one change set per environment with changes; apply or request approval at once."""
    staged = []
    owner = members.project_actor(project.slug)
    for env in sync_environments(session, ctx, project, file):
        new = file.environment(env.name)
        assert new is not None
        units = units_of(session, env)
        live = {name: releases.live_values(u) for name, u in units.items()}
        heads = {name: h for name, u in units.items() if (h := releases.headline(u.active_release))}
        lines = planning.plan(recorded_config(env), new, live, heads)
        for older in changesets.open_for(session, env.id, owner):
            changesets.discard(
                session, ctx.clock, older, messages.replaced_by(commit.short), actor=owner
            )
        if not lines:
            continue
        changeset = changesets.create(session, ctx.clock, env, owner, commit, file.source, lines)
        staged.append(changeset)
        touched = {line.service for line in lines}
        held = [s.name for s in new.services if s.name in touched and not s.auto_deploy]
        if held:
            changeset.note = (
                f"Draft: {', '.join(sorted(held))} "
                f"{'has' if len(held) == 1 else 'have'} auto_deploy = false; "
                f"apply it with: nebula changeset apply {changeset.id}"
            )
            events.record(
                session,
                ctx.clock.now(),
                "changeset",
                project_id=project.id,
                environment_id=env.id,
                changeset_id=changeset.id,
                state=ChangeSetState.DRAFT.value,
                message=changeset.note,
                actor=owner,
            )
            continue
        applying.apply(session, ctx, changeset, requester=owner)
    return staged
