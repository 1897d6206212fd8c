"""A change set just staged goes on by itself: held as a draft while its promotion gate waits
or a service it touches has ``auto_deploy = false``, else applied (which requests the
approval of a protected environment, and checks freezes and the concurrency cap).

Every way a change set is staged goes through here: a push (``gitops.staging``) and a new
value of a server-side secret (``rotating``). A change set waiting on its gate is checked
again on every reconcile pass (``recheck``), so it goes on, exactly as if just staged, once
the gate passes, whichever replica looks first and after a restart alike (not while its
environment is suspended).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.context import Context
from reconciler.core.states import ChangeSetState, GateState, LineKind
from reconciler.requests import applying, changesets, gates, guards
from reconciler.requests.applying import Applied
from reconciler.store import schema


def held_by_auto_deploy(changeset: schema.ChangeSet) -> list[str]:
    """The services it touches whose ``auto_deploy = false`` keeps it a draft."""
    touched = {line.service for line in changeset.lines if line.kind != LineKind.ENVIRONMENT.value}
    services = changesets.config(changeset).services
    return sorted(s.name for s in services if s.name in touched and not s.auto_deploy)


def proceed(
    session: Session, ctx: Context, changeset: schema.ChangeSet, *, requester: str
) -> Applied | None:
    """Apply ``changeset`` unless its gate or ``auto_deploy`` holds it (its note says which).
    In a suspended environment the gate is still checked (what it waits for stays visible),
    but the note is the suspension's: ``apply`` refuses it first."""
    gate = gates.check(session, ctx, changeset)
    if gate is not None and gate.state is GateState.FAILED:
        return None  # it ended failed
    if guards.suspension(changeset.environment) is not None:
        return applying.apply(session, ctx, changeset, requester=requester)
    if gate is not None and gate.state is not GateState.PASSED:
        return None
    held = held_by_auto_deploy(changeset)
    if held:
        changesets.note(
            session,
            ctx.clock,
            changeset,
            f"Draft: {', '.join(held)} {'has' if len(held) == 1 else 'have'} "
            f"auto_deploy = false; apply it with: nebula changeset apply {changeset.id}",
            actor=requester,
        )
        return None
    return applying.apply(session, ctx, changeset, requester=requester)


_WAITING = (
    schema.ChangeSet.state == ChangeSetState.DRAFT.value,
    schema.ChangeSet.gate_state == GateState.WAITING.value,
)


def recheck(ctx: Context, project: str | None = None) -> int:
    """Check every change set waiting on its gate again; those whose gate passed go on, those
    whose gate failed end. Returns how many moved. Each is locked while it is checked (skipped
    if another replica has it), and checked only if it still waits."""
    with ctx.db.transaction() as session:
        query = select(schema.ChangeSet.id).where(*_WAITING).order_by(schema.ChangeSet.id)
        if project is not None:
            query = query.join(
                schema.Project, schema.Project.id == schema.ChangeSet.project_id
            ).where(schema.Project.slug == project)
        waiting = list(session.scalars(query))
    moved = 0
    for changeset_id in waiting:
        with ctx.db.transaction() as session:
            changeset = session.scalars(
                select(schema.ChangeSet)
                .where(schema.ChangeSet.id == changeset_id, *_WAITING)
                .with_for_update(skip_locked=True)
            ).first()
            if changeset is None:
                continue  # another replica has it, or it moved meanwhile
            if guards.suspension(changeset.environment) is not None:
                gates.check(session, ctx, changeset)  # shown as it is; resuming lets it on
                continue
            proceed(session, ctx, changeset, requester=changeset.owner)
            moved += int(changeset.gate_state != GateState.WAITING.value)
    return moved
