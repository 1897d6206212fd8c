"""Promotion gates, read from the store (behaviour.md "Promotion gates"): what the gating
environment proves about an image, a change set's gate (recorded on it, and its end when the
gate failed), the evidence an approval request shows, and the gate of ``nebula promote``.

The decisions are ``core.gates``'; this module only gathers their facts and records them.
The settings that gate an environment are the ones in effect (``promote_from`` and ``soak`` on
the environment's row), so a change set that removes a gate is still gated by it.
"""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session, joinedload
from sqlalchemy.sql.elements import ColumnElement

from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core import gates
from reconciler.core.gates import Evidence, Gate, Verdict
from reconciler.core.planning import FIRST_DEPLOY_FIELD
from reconciler.core.states import ChangeSetState, DeploymentState, GateState, ServiceKind
from reconciler.model import graph
from reconciler.model.frozen import FrozenRelease
from reconciler.requests import changesets
from reconciler.store import events, schema

# The fields of a line that bring a new image: a service's image, a database's engine version.
GATED_FIELDS = {
    ServiceKind.SERVICE.value: frozenset({FIRST_DEPLOY_FIELD, "image"}),
    ServiceKind.DATABASE.value: frozenset({FIRST_DEPLOY_FIELD, "engine", "version"}),
}


def gate_of(env: schema.Environment) -> Gate | None:
    if env.promote_from is None:
        return None
    return Gate(env.promote_from, timedelta(seconds=env.soak_seconds or 0))


def evidence(
    session: Session, env: schema.Environment, gate: Gate, unit: str, image: str
) -> Evidence:
    """Every stretch during which a release of ``image`` was ``unit``'s active release in the
    gating environment, and the newest deployment there of such a release."""
    row = session.scalars(
        select(schema.Unit)
        .join(schema.Environment, schema.Environment.id == schema.Unit.environment_id)
        .where(
            schema.Environment.project_id == env.project_id,
            schema.Environment.name == gate.environment,
            schema.Unit.name == unit,
        )
    ).first()
    if row is None:
        return Evidence(unit)
    mine = session.scalars(
        select(schema.Deployment)
        .join(schema.Release, schema.Release.id == schema.Deployment.release_id)
        .where(schema.Deployment.unit_id == row.id, _same_image(image))
        .options(joinedload(schema.Deployment.release))
        .order_by(schema.Deployment.id)
    ).all()
    stretches = []
    for d in mine:
        if d.state != DeploymentState.HEALTHY.value or d.finished_at is None:
            continue
        # Until the unit's next deployment went healthy (whatever it ran), if one did.
        until = session.scalar(
            select(func.min(schema.Deployment.finished_at)).where(
                schema.Deployment.unit_id == row.id,
                schema.Deployment.state == DeploymentState.HEALTHY.value,
                or_(
                    schema.Deployment.finished_at > d.finished_at,
                    and_(
                        schema.Deployment.finished_at == d.finished_at,
                        schema.Deployment.id > d.id,
                    ),
                ),
            )
        )
        if until is None and row.active_release_id != d.release_id:
            until = d.release.retired_at or d.finished_at  # it stopped serving some other way
        stretches.append(gates.Stretch(d.release.name, d.finished_at, until))
    latest = None
    if mine:
        last = mine[-1]
        latest = gates.Attempt(last.release.name, DeploymentState(last.state), last.blocker)
    return Evidence(unit, tuple(stretches), latest)


def _same_image(image: str) -> ColumnElement[bool]:
    """Releases of ``image``: by its digest, whatever registry or name it is pulled by
    (behaviour.md, "that exact image (same digest)"; an environment may pull from a mirror);
    a reference without a digest (a database's engine version) by the whole of it."""
    _, at, digest = image.rpartition("@")
    if at and re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        return schema.Release.image.endswith(f"@{digest}")  # hex: nothing LIKE reads
    return schema.Release.image == image


def decide(
    session: Session, ctx: Context, env: schema.Environment, gate: Gate, unit: str, image: str
) -> Verdict:
    return gates.decide(evidence(session, env, gate, unit, image), gate, ctx.clock.now())


def gated_units(changeset: schema.ChangeSet) -> list[tuple[str, str]]:
    """The units whose lines bring a new image (or database version), in dependency order,
    each with the image its release would run."""
    names = {
        line.service
        for line in changeset.lines
        if line.field in GATED_FIELDS.get(line.unit_kind, frozenset())
    }
    if not names:
        return []
    config = changesets.config(changeset)
    out = []
    for name in graph.apply_order(config, names):
        spec = config.unit(name)
        assert spec is not None
        out.append((name, FrozenRelease.of(config, spec).image))
    return out


def check(session: Session, ctx: Context, changeset: schema.ChangeSet) -> Verdict | None:
    """The change set's gate now, recorded on it (None: its environment has no gate). While
    it waits, its note says for what; when it fails, the change set ends ``failed``."""
    env = changeset.environment
    gate = gate_of(env)
    if gate is None:
        changeset.gate_environment = changeset.gate_state = changeset.gate_message = None
        changeset.gate_soak_seconds = None
        return None
    verdict = gates.combine(
        decide(session, ctx, env, gate, unit, image) for unit, image in gated_units(changeset)
    )
    before, was = changeset.gate_state, changeset.gate_message
    changeset.gate_environment = gate.environment
    changeset.gate_soak_seconds = int(gate.soak.total_seconds())
    changeset.gate_state = verdict.state.value
    changeset.gate_message = verdict.message
    if verdict.state is GateState.WAITING and projects.suspended(env) is None:
        changeset.note = verdict.message  # (while suspended, the suspension's note stays)
    elif changeset.note is not None and changeset.note == was:
        changeset.note = None  # it no longer waits
    if before == verdict.state.value:
        return verdict
    if verdict.state is GateState.FAILED:
        changesets.move(
            session, ctx.clock, changeset, ChangeSetState.FAILED, verdict.message, actor=None
        )
    else:
        shown = verdict.message if before is None else f"Gate {verdict.state}: {verdict.message}"
        events.changeset(session, ctx.clock.now(), changeset, shown, actor=None)
    return verdict


def proof(
    session: Session, ctx: Context, env: schema.Environment, units: list[tuple[str, str]]
) -> list[str] | None:
    """What an approval request in a gated environment shows: for each unit it deploys whose
    image the gating environment proved, ``Verified in staging: api r-4 healthy since ...``.
    None for an environment without a gate."""
    gate = gate_of(env)
    if gate is None:
        return None
    verdicts = [decide(session, ctx, env, gate, unit, image) for unit, image in units]
    return [v.message for v in verdicts if v.state is GateState.PASSED]


def promotion(
    session: Session, ctx: Context, env: schema.Environment, unit: str, image: str
) -> str | None:
    """Why the gate refuses to promote ``image`` of ``unit`` into ``env`` (None: it passes,
    or ``env`` has no gate): ``api r-4 has been healthy in staging for 12m; production needs
    30m``."""
    gate = gate_of(env)
    if gate is None:
        return None
    found = evidence(session, env, gate, unit, image)
    now = ctx.clock.now()
    if gates.decide(found, gate, now).state is GateState.PASSED:
        return None
    return gates.too_young(unit, gate, env.name, found, now)
