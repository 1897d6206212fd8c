"""Applying a change set: atomic, refused on drift, one deployment per affected unit in order.

In a protected environment applying creates one approval for the whole change set, and the
deployments wait in awaiting-approval until it is decided (or pass at once by a rule). The
file is recorded for the environment (what the next push is diffed against) only when the
change set is actually applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.context import Context
from reconciler.core.planning import FIRST_DEPLOY_FIELD, REMOVAL_FIELD
from reconciler.core.states import (
    ApprovalTarget,
    ChangeSetState,
    DeploymentKind,
    DeploymentState,
    LineKind,
    ServiceKind,
    ServiceStatus,
)
from reconciler.core.transitions import Trigger
from reconciler.engine import queueing, recording, releases
from reconciler.errors import RefusedError
from reconciler.model import graph, validation
from reconciler.model.specs import DatabaseSpec, EnvironmentConfig
from reconciler.requests import approvals, changesets, guards
from reconciler.store import events, schema


@dataclass
class Applied:
    changeset: schema.ChangeSet
    refused: str | None = None
    approval: schema.Approval | None = None
    deployments: list[schema.Deployment] = field(default_factory=list)
    ended: list[queueing.Ended] = field(default_factory=list)


def _config(changeset: schema.ChangeSet) -> EnvironmentConfig:
    config = validation.load(changeset.file_text).environment(changeset.environment.name)
    assert config is not None, "a staged file always declares its environment"
    return config


def _live(unit: schema.Unit | None, field_name: str) -> object:
    if unit is None:
        return None
    if field_name in (FIRST_DEPLOY_FIELD, REMOVAL_FIELD):
        return releases.headline(unit.active_release)
    return releases.live_values(unit).get(field_name)


def _refuse(
    session: Session, ctx: Context, changeset: schema.ChangeSet, note: str, actor: str
) -> Applied:
    changeset.note = note
    events.record(
        session,
        ctx.clock.now(),
        "changeset",
        project_id=changeset.project_id,
        environment_id=changeset.environment_id,
        changeset_id=changeset.id,
        state=changeset.state,
        message=f"Not applied: {note}",
        actor=actor,
    )
    return Applied(changeset, refused=note)


def apply(
    session: Session, ctx: Context, changeset: schema.ChangeSet, *, requester: str
) -> Applied:
    """Apply ``changeset``; a refusal (drift, freeze, concurrency) is returned, not raised,
    so that what it records (drifted lines, the note) is committed with it."""
    from reconciler.gitops.staging import units_of

    if changeset.state != ChangeSetState.DRAFT.value:
        raise RefusedError(
            f"Change set {changeset.id} is {changeset.state}; only a draft can be applied",
            code="conflict",
        )
    env = changeset.environment
    project = env.project
    units = units_of(session, env)
    drifted = []
    for line in changeset.lines:
        line.drifted = _live(units.get(line.service), line.field) != line.before
        if line.drifted:
            drifted.append(line)
    if drifted:
        shown = "; ".join(
            f"{line.service} {line.field} (staged with {line.before!r}, now {_live(units.get(line.service), line.field)!r})"
            for line in drifted
        )
        return _refuse(
            session,
            ctx,
            changeset,
            f"{len(drifted)} line{'s' if len(drifted) != 1 else ''} drifted since staged: {shown}. "
            "Push again or restage to replace this change set.",
            requester,
        )
    config = _config(changeset)
    deploying = {
        line.service
        for line in changeset.lines
        if LineKind(line.kind).needs_deployment and line.kind != LineKind.REMOVAL.value
    }
    order = graph.apply_order(config, deploying)
    try:
        guards.check_freeze(session, ctx.clock, env, None)
    except RefusedError as exc:
        return _refuse(session, ctx, changeset, exc.message, requester)
    outcome = None
    if env.protected:
        flags = tuple(units[n].skip_production_approval if n in units else False for n in order)
        outcome = approvals.evaluate(session, None, requester, flags)
    passes = outcome is None or outcome.rule is not None
    if passes:
        try:
            _check_concurrency(session, project, units, order)
        except RefusedError as exc:
            return _refuse(session, ctx, changeset, exc.message, requester)
    result = Applied(changeset)
    if outcome is not None:
        result.approval = approvals.request(
            session,
            ctx.clock,
            ctx.settings,
            env,
            ApprovalTarget.CHANGESET,
            changeset.id,
            "changeset",
            requester,
            outcome,
        )
    source = f"commit {changeset.commit[:7]}" if changeset.commit else f"change set {changeset.id}"
    for name in order:
        unit = units.get(name) or _new_unit(session, ctx, env, config, name)
        spec = config.unit(name)
        assert spec is not None
        image = spec.image if not isinstance(spec, DatabaseSpec) else f"postgres:{spec.version}"
        release = releases.create(
            session, ctx.clock, unit, releases.freeze(config, spec), image, source
        )
        result.deployments.append(
            queueing.create(
                session,
                ctx.clock,
                unit,
                release,
                DeploymentKind.DEPLOY,
                requester,
                awaiting_approval=not passes,
                message=outcome.message if outcome is not None else None,
                changeset_id=changeset.id,
            )
        )
    if passes:
        result.ended = complete(session, ctx, changeset, actor=requester)
    else:
        changeset.state = ChangeSetState.PENDING_APPROVAL.value
        changeset.note = None  # why it was held (a freeze, the cap) is past: it is applied now
        events.record(
            session,
            ctx.clock.now(),
            "changeset",
            project_id=project.id,
            environment_id=env.id,
            changeset_id=changeset.id,
            state=changeset.state,
            message=outcome.message if outcome is not None else None,
            actor=requester,
        )
    return result


def _check_concurrency(
    session: Session, project: schema.Project, units: dict[str, schema.Unit], order: list[str]
) -> None:
    ending = [
        d.id
        for name in order
        if name in units
        for d in recording.open_for_unit(session, units[name].id)
        if not DeploymentState(d.state).is_taking_traffic
    ]
    guards.check_concurrency(session, project, [1] * len(order), ending)


def _new_unit(
    session: Session, ctx: Context, env: schema.Environment, config: EnvironmentConfig, name: str
) -> schema.Unit:
    spec = config.unit(name)
    kind = (ServiceKind.DATABASE if isinstance(spec, DatabaseSpec) else ServiceKind.SERVICE).value
    # Back in the file after it was removed and torn down: the same row (environment and name
    # are unique), so its release numbers carry on. It stays removed until the change set
    # takes effect (``complete``): a rejected one must not bring it back.
    removed = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name == name)
    ).first()
    if removed is not None:
        removed.kind = kind
        removed.auto_deploy = getattr(spec, "auto_deploy", True)
        return removed
    unit = schema.Unit(
        project_id=env.project_id,
        environment_id=env.id,
        name=name,
        kind=kind,
        status=ServiceStatus.ACTIVE.value,
        auto_deploy=getattr(spec, "auto_deploy", True),
        skip_production_approval=False,
        next_release_number=1,
        created_at=ctx.clock.now(),
    )
    session.add(unit)
    session.flush()
    return unit


def complete(
    session: Session, ctx: Context, changeset: schema.ChangeSet, *, actor: str | None
) -> list[queueing.Ended]:
    """The change set takes effect: recorded, settings changed, its deployments start."""
    from reconciler.gitops.staging import units_of

    env = changeset.environment
    changesets.finish(session, ctx.clock, changeset, ChangeSetState.APPLIED, None, actor=actor)
    env.recorded_file = changeset.file_text
    env.recorded_commit = changeset.commit
    units = units_of(session, env)
    for line in changeset.lines:
        unit = units.get(line.service)
        if unit is None:
            continue
        if line.kind == LineKind.AUTO_DEPLOY.value:
            unit.auto_deploy = bool(line.after)
        elif line.kind == LineKind.REMOVAL.value:
            _remove(session, ctx, unit, actor)
    ended: list[queueing.Ended] = []
    for deployment in changesets.deployments_of(session, changeset.id):
        if not DeploymentState(deployment.state).is_final:
            _back_in_file(session, ctx, deployment.unit, actor)
            ended += queueing.enter_pending(session, ctx.clock, deployment, actor)
    return ended


def _back_in_file(session: Session, ctx: Context, unit: schema.Unit, actor: str | None) -> None:
    """A unit removed earlier is deployed again: it is active (a teardown not yet done is
    called off; the teardown checks the status again before it records anything)."""
    if unit.status == ServiceStatus.ACTIVE.value:
        return
    unit.status = ServiceStatus.ACTIVE.value
    events.record(
        session,
        ctx.clock.now(),
        "unit",
        project_id=unit.project_id,
        environment_id=unit.environment_id,
        state=unit.status,
        message=f"{unit.name} is back in nebula.toml",
        actor=actor,
    )


def _remove(session: Session, ctx: Context, unit: schema.Unit, actor: str | None) -> None:
    """A unit removed from the file is torn down; the engine does it (idempotently)."""
    for deployment in recording.open_for_unit(session, unit.id):
        if not DeploymentState(deployment.state).is_taking_traffic:
            recording.move(
                session,
                ctx.clock,
                deployment,
                Trigger.CANCEL,
                message=f"{unit.name} was removed from nebula.toml",
                actor=actor,
            )
    unit.status = ServiceStatus.PENDING_TEARDOWN.value
    events.record(
        session,
        ctx.clock.now(),
        "unit",
        project_id=unit.project_id,
        environment_id=unit.environment_id,
        state=unit.status,
        message=f"{unit.name} removed from nebula.toml: tearing it down",
        actor=actor,
    )
