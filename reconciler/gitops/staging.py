"""A new valid nebula.toml at a new commit -> one change set per environment that changed.

Environments and units rows are kept in step with the file here. A newer push replaces the
project's older unapplied change set for an environment; an environment with no line gets no
change set. Each goes on as ``requests.proceeding`` says: held while its promotion gate
waits or a touched service has ``auto_deploy = false``, else applied at once in unprotected
environments, with an approval requested at once in protected ones (a push is an action that
starts a deployment there). An environment's own settings change only when a change set
carrying them is applied.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.admin import members, projects
from reconciler.context import Context
from reconciler.core import messages, planning
from reconciler.engine import releases
from reconciler.model import validation
from reconciler.model.specs import ProjectFile
from reconciler.requests import changesets, proceeding
from reconciler.requests.changesets import Commit
from reconciler.store import schema


def sync_environments(
    session: Session, ctx: Context, project: schema.Project, file: ProjectFile
) -> list[schema.Environment]:
    existing = {e.name: e for e in project.environments}
    out = []
    for position, spec in enumerate(file.environments):
        env = existing.get(spec.name)
        if env is None:
            # A new environment starts with the file's settings; later changes to them are
            # change-set lines, in effect once their change set is applied.
            env = schema.Environment(
                project_id=project.id, name=spec.name, position=position, created_at=ctx.clock.now()
            )
            projects.set_environment(env, spec)
            session.add(env)
            project.environments.append(env)
        env.position = position
        env.in_file = True
        out.append(env)
    for name, env in existing.items():
        if file.environment(name) is None:
            env.in_file = False
    session.flush()
    return out


def stage(
    session: Session, ctx: Context, project: schema.Project, commit: Commit, file: ProjectFile
) -> list[schema.ChangeSet]:
    """Stage one change set per environment with changes; apply or request approval at once."""
    staged = []
    owner = members.project_actor(project.slug)
    for env in sync_environments(session, ctx, project, file):
        new = file.environment(env.name)
        assert new is not None
        units = projects.units(session, env)
        live = {name: releases.live_values(u) for name, u in units.items()}
        heads = {name: h for name, u in units.items() if (h := releases.headline(u.active_release))}
        shown = {name: releases.live_resolved(u, env.namespace) for name, u in units.items()}
        lines = planning.plan(
            projects.recorded_config(env),
            new,
            live,
            heads,
            shown,
            namespace=env.namespace,
            live_environment=projects.live_environment(env),
        )
        for older in changesets.open_for(session, env.id, owner):
            changesets.discard(
                session, ctx.clock, older, messages.replaced_by(commit.short), actor=owner
            )
        if not lines:
            continue
        changeset = changesets.create(
            session,
            ctx.clock,
            env,
            owner,
            commit,
            file.source,
            lines,
            manifest_files=dict(file.files) if validation.manifest_paths(file) else None,
        )
        staged.append(changeset)
        proceeding.proceed(session, ctx, changeset, requester=owner)
    return staged
