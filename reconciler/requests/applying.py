"""Applying a change set: atomic, refused on drift, one deployment per affected unit in order.

In a protected environment applying creates one approval for the whole change set, and the
deployments wait in awaiting-approval until it is decided (or pass at once by a rule). The
file is recorded for the environment (what the next push is diffed against) only when the
change set is actually applied.

An apply is an ordered list of checks, each of which may refuse it with a note (a
suspension, its promotion gate, drift, a freeze, the concurrency cap); a refusal is returned,
not raised, so that what it records (drifted lines, the note, a failed gate) is committed with
it. In a gated environment the approval records what the gating environment proved
(``gates.proof``). The environment's own settings change when a change set carrying them takes
effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core import approving, planning
from reconciler.core.planning import FIRST_DEPLOY_FIELD, REMOVAL_FIELD, unit_kind
from reconciler.core.states import (
    ApprovalTarget,
    ChangeSetState,
    DeploymentKind,
    DeploymentState,
    GateState,
    LineKind,
    ServiceStatus,
)
from reconciler.engine import queueing, recording, releases
from reconciler.engine.queueing import Ended
from reconciler.errors import ConfigurationError, ConflictError, RefusedError
from reconciler.model import graph
from reconciler.model.frozen import FrozenRelease
from reconciler.model.specs import EnvironmentConfig, ServiceSpec
from reconciler.requests import approvals, changesets, domains, gates, guards, starting
from reconciler.store import events, schema

MESSAGE_LIMIT = 500  # characters of ``changeset apply --message``


@dataclass
class Applied:
    changeset: schema.ChangeSet
    refused: str | None = None
    approval: schema.Approval | None = None
    deployments: list[schema.Deployment] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)


def _live(
    env: schema.Environment, units: dict[str, schema.Unit], line: schema.ChangeSetLine
) -> object:
    """The live value a line's ``before`` is compared with: the environment's setting, a
    resolved value for a line that changed through a reference (``via``), else the field as
    the active release has it."""
    if line.kind == LineKind.ENVIRONMENT.value:
        return planning.environment_values(projects.live_environment(env)).get(line.field)
    unit = units.get(line.service)
    if unit is None:
        return None
    if line.field in (FIRST_DEPLOY_FIELD, REMOVAL_FIELD):
        return releases.headline(unit.active_release)
    if line.via is not None:
        return releases.live_resolved(unit, env.namespace).get(line.field)
    return releases.live_values(unit).get(line.field)


def _refuse(
    session: Session, ctx: Context, changeset: schema.ChangeSet, refused: str, requester: str
) -> Applied:
    """The draft stays a draft, noted with why, and an event says so."""
    changeset.note = refused
    events.changeset(
        session, ctx.clock.now(), changeset, f"Not applied: {refused}", actor=requester
    )
    return Applied(changeset, refused=refused)


def _drifted(changeset: schema.ChangeSet, units: dict[str, schema.Unit]) -> str | None:
    """Every line's ``before`` against the live value now; the drifted lines are marked."""
    env = changeset.environment
    drifted = []
    for line in changeset.lines:
        line.drifted = _live(env, units, line) != line.before
        if line.drifted:
            drifted.append(line)
    if not drifted:
        return None
    shown = "; ".join(
        f"{line.service} {line.field} (staged with {line.before!r}, "
        f"now {_live(env, units, line)!r})"
        for line in drifted
    )
    return (
        f"{len(drifted)} line{'s' if len(drifted) != 1 else ''} drifted since staged: {shown}. "
        "Push again or restage to replace this change set."
    )


def _frozen(session: Session, ctx: Context, env: schema.Environment) -> str | None:
    try:
        guards.check_freeze(session, ctx.clock, env, None)
    except RefusedError as exc:
        return exc.message
    return None


def _over_cap(
    session: Session, project: schema.Project, units: dict[str, schema.Unit], order: list[str]
) -> str | None:
    ending = [
        d.id
        for name in order
        if name in units
        for d in recording.open_for_unit(session, units[name].id)
        if not DeploymentState(d.state).is_taking_traffic
    ]
    try:
        guards.check_concurrency(session, project, [1] * len(order), ending)
    except RefusedError as exc:
        return exc.message
    return None


def apply(
    session: Session,
    ctx: Context,
    changeset: schema.ChangeSet,
    *,
    requester: str,
    message: str | None = None,
) -> Applied:
    """Apply ``changeset`` now, or say why not (``Applied.refused``). ``message``: what the
    person applying it says (``--message``), recorded on the change set, its deployments'
    first event and its approval request."""
    said = applied_message(message)
    if changeset.state != ChangeSetState.DRAFT.value:
        raise ConflictError(
            f"Change set {changeset.id} is {changeset.state}; only a draft can be applied"
        )
    env = changeset.environment
    held = guards.suspension(env)  # before the gate: a suspension's note wins over its wait
    if held is not None:
        return _refuse(session, ctx, changeset, held, requester)
    gate = gates.check(session, ctx, changeset)
    if gate is not None and gate.state is not GateState.PASSED:
        return Applied(changeset, refused=gate.message)  # waiting for it, or ended failed
    units = projects.units(session, env)
    config = changesets.config(changeset)
    deploying = {
        line.service
        for line in changeset.lines
        if LineKind(line.kind).needs_deployment and line.kind != LineKind.REMOVAL.value
    }
    order = graph.apply_order(config, deploying)
    outcome: approving.Outcome | None = None
    if env.protected:
        flags = tuple(units[n].skip_production_approval if n in units else False for n in order)
        outcome = approvals.evaluate(session, env, None, requester, flags)
    passes = outcome is None or outcome.rule is not None
    refused = (
        _drifted(changeset, units)
        or domains.claimed(session, env, config)
        or _frozen(session, ctx, env)
        or (_over_cap(session, env.project, units, order) if passes else None)
    )
    if refused is not None:
        return _refuse(session, ctx, changeset, refused, requester)
    result = Applied(changeset)
    changeset.applied_message = said  # before the approval request, which shows it
    frozen = {name: _release_config(changeset, config, name, units.get(name)) for name in order}
    if outcome is not None:
        result.approval = approvals.request(
            session,
            ctx.clock,
            ctx.settings,
            env,
            ApprovalTarget.CHANGESET,
            changeset.id,
            ApprovalTarget.CHANGESET.value,
            requester,
            outcome,
            evidence=gates.proof(session, ctx, env, [(n, frozen[n].image) for n in order]),
        )
    source = f"commit {changeset.commit[:7]}" if changeset.commit else f"change set {changeset.id}"
    for name in order:
        unit = units.get(name) or _new_unit(session, ctx, env, config, name)
        release = releases.create(session, ctx.clock, unit, frozen[name], source)
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
                said=said,
            )
        )
    if passes:
        result.ended = complete(session, ctx, changeset, actor=requester)
    else:
        assert outcome is not None
        changesets.move(
            session,
            ctx.clock,
            changeset,
            ChangeSetState.PENDING_APPROVAL,
            outcome.message,
            actor=requester,
        )
    return result


def applied_message(text: str | None) -> str | None:
    """The message given when applying, trimmed (an empty one is none); refused over
    ``MESSAGE_LIMIT`` characters, as the console's dialog does (004: "up to 500")."""
    said = (text or "").strip()
    if len(said) > MESSAGE_LIMIT:
        raise ConfigurationError(
            f"The message is {len(said)} characters long; a change set's message is at most "
            f"{MESSAGE_LIMIT}",
            hint="shorten it; the commit message and the change set's lines say the rest",
        )
    return said or None


def _release_config(
    changeset: schema.ChangeSet, config: EnvironmentConfig, name: str, unit: schema.Unit | None
) -> FrozenRelease:
    """What the unit's new release freezes: the change set's file, or, when a secret it reads
    is all that changed, the active release again (a rollback stays what it rolled to)."""
    mine = [line for line in changeset.lines if line.service == name]
    if (
        unit is not None
        and unit.active_release is not None
        and all(line.kind == LineKind.SECRET.value for line in mine)
    ):
        return releases.frozen(unit.active_release)
    spec = config.unit(name)
    assert spec is not None
    return FrozenRelease.of(config, spec)


def _new_unit(
    session: Session, ctx: Context, env: schema.Environment, config: EnvironmentConfig, name: str
) -> schema.Unit:
    spec = config.unit(name)
    assert spec is not None
    kind = unit_kind(spec).value
    auto_deploy = spec.auto_deploy if isinstance(spec, ServiceSpec) else True
    # Back in the file after it was removed and torn down: the same row (environment and name
    # are unique), so its release numbers carry on. It stays removed until the change set
    # takes effect (``complete``): a rejected one must not bring it back.
    removed = session.scalars(
        select(schema.Unit).where(schema.Unit.environment_id == env.id, schema.Unit.name == name)
    ).first()
    if removed is not None:
        removed.kind = kind
        removed.auto_deploy = auto_deploy
        if not releases.ever_served(session, removed):
            # Only ever in a change set that ended unapplied: new again, listed as a new one is.
            removed.status = ServiceStatus.ACTIVE.value
        return removed
    unit = schema.Unit(
        project_id=env.project_id,
        environment_id=env.id,
        name=name,
        kind=kind,
        status=ServiceStatus.ACTIVE.value,
        auto_deploy=auto_deploy,
        skip_production_approval=False,
        next_release_number=1,
        created_at=ctx.clock.now(),
    )
    session.add(unit)
    session.flush()
    return unit


def complete(
    session: Session, ctx: Context, changeset: schema.ChangeSet, *, actor: str | None
) -> list[Ended]:
    """The change set takes effect: recorded, settings changed, its deployments start."""
    env = changeset.environment
    changesets.move(session, ctx.clock, changeset, ChangeSetState.APPLIED, None, actor=actor)
    if changesets.from_file(changeset):
        env.recorded_file = changeset.file_text
        env.recorded_manifests = changeset.manifest_files
        env.recorded_commit = changeset.commit
    if any(line.kind == LineKind.ENVIRONMENT.value for line in changeset.lines):
        # Its settings (protection, the gate, self-heal) are the applied file's from now on.
        projects.set_environment(env, changesets.config(changeset).environment)
    units = projects.units(session, env)
    for line in changeset.lines:
        unit = units.get(line.service)
        if unit is None or line.kind == LineKind.ENVIRONMENT.value:
            continue
        if line.kind == LineKind.AUTO_DEPLOY.value:
            unit.auto_deploy = bool(line.after)
        elif line.kind == LineKind.REMOVAL.value:
            _remove(session, ctx, unit, actor)
    ended: list[Ended] = []
    for deployment in changesets.deployments_of(session, changeset.id):
        if not DeploymentState(deployment.state).is_final:
            _back_in_file(session, ctx, deployment.unit, actor)
            ended += starting.start(session, ctx.clock, deployment, actor)
    return ended


def _back_in_file(session: Session, ctx: Context, unit: schema.Unit, actor: str | None) -> None:
    """A unit removed earlier is deployed again: it is active (a teardown not yet done is
    called off; the teardown checks the status again before it records anything)."""
    if unit.status == ServiceStatus.ACTIVE.value:
        return
    unit.status = ServiceStatus.ACTIVE.value
    events.unit(session, ctx.clock.now(), unit, f"{unit.name} is back in nebula.toml", actor=actor)


def _remove(session: Session, ctx: Context, unit: schema.Unit, actor: str | None) -> None:
    """A unit removed from the file is torn down; the engine does it (idempotently). What is
    still queued for it is cancelled, with whatever gated it."""
    for deployment in recording.open_for_unit(session, unit.id):
        if not DeploymentState(deployment.state).is_taking_traffic:
            starting.cancel(
                session,
                ctx.clock,
                deployment,
                actor,
                message=f"{unit.name} was removed from nebula.toml",
            )
    unit.status = ServiceStatus.PENDING_TEARDOWN.value
    events.unit(
        session,
        ctx.clock.now(),
        unit,
        f"{unit.name} removed from nebula.toml: tearing it down",
        actor=actor,
    )
