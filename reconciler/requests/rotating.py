"""A server-side secret set to a new value: a change set that redeploys the services reading it.

``nebula secret set`` with a value other than the stored one stages, for that environment, a
change set owned by the member who set it, with one line ``secret.NAME`` per service whose
active release reads the secret (values are never part of a line: it says the secret
changed). It goes on like any staged change set (``proceeding``): applied at once unless a
service has ``auto_deploy = false``, an approval in a protected environment, freezes and the
concurrency cap checked. Each new release is the active one again (a rollback stays what it
rolled back to); it reads the secret's new value when it is applied to the cluster.

A secret that was missing stages nothing: the deployments held for it carry on by themselves.
A newer value replaces the change set of an older one that is still open.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core import planning
from reconciler.core.states import OPEN_CHANGESET_STATES, ServiceStatus
from reconciler.engine import releases
from reconciler.model import graph
from reconciler.requests import changesets, proceeding
from reconciler.store import schema


def readers(session: Session, env: schema.Environment, name: str) -> list[str]:
    """The services whose active release reads secret ``name``, in deploy order."""
    config = projects.recorded_config(env)
    if config is None:
        return []
    found = [
        u.name
        for u in projects.units(session, env).values()
        if u.status == ServiceStatus.ACTIVE.value
        and u.active_release is not None
        and config.service(u.name) is not None
        and name in releases.frozen(u.active_release).secret_names
    ]
    return graph.apply_order(config, found)


def _replace_older(
    session: Session, ctx: Context, env: schema.Environment, name: str, owner: str
) -> None:
    field = planning.secret_field(name)
    older = session.scalars(
        select(schema.ChangeSet)
        .join(schema.ChangeSetLine, schema.ChangeSetLine.changeset_id == schema.ChangeSet.id)
        .where(
            schema.ChangeSet.environment_id == env.id,
            schema.ChangeSet.commit.is_(None),
            schema.ChangeSet.state.in_([s.value for s in OPEN_CHANGESET_STATES]),
            schema.ChangeSetLine.field == field,
        )
        .distinct()
    ).all()
    for changeset in older:
        changesets.discard(
            session,
            ctx.clock,
            changeset,
            f"Replaced by a newer value of {name} set by {owner}",
            actor=owner,
        )


def stage(
    session: Session, ctx: Context, project: schema.Project, env_name: str, name: str, owner: str
) -> schema.ChangeSet | None:
    """Stage (and go on with) the change set a new value of ``name`` in ``env_name`` makes;
    None when no service there reads it yet."""
    env = next((e for e in project.environments if e.name == env_name), None)
    if env is None or not env.recorded_file:
        return None
    _replace_older(session, ctx, env, name, owner)
    users = readers(session, env, name)
    if not users:
        return None
    changeset = changesets.create(
        session,
        ctx.clock,
        env,
        owner,
        None,
        env.recorded_file,
        planning.secret_lines(name, users),
        message=f"A new value of secret {name}",
        manifest_files=env.recorded_manifests,
    )
    proceeding.proceed(session, ctx, changeset, requester=owner)
    return changeset
