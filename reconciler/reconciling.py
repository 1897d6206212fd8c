"""One reconcile pass: expire approvals, poll, advance (change sets waiting on a promotion
gate, then deployments), check the live state of units whose last check is older than
NEBULA_DRIFT_INTERVAL. Shared by ``nebula reconcile`` and the scheduler of ``nebula serve``
(whose tick is ``advance``; it runs the drift checks on a timer of their own)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from reconciler.context import Context
from reconciler.engine import drifting, ticking
from reconciler.errors import NebulaError
from reconciler.gitops import polling
from reconciler.requests import deciding, proceeding, removing
from reconciler.store import heartbeats

log = logging.getLogger("nebula.reconcile")


@dataclass
class PassReport:
    expired: int = 0
    poll: polling.PollReport = field(default_factory=polling.PollReport)
    moved: int = 0  # deployment steps taken
    checked: int = 0  # units whose live state was compared with their release
    busy: bool = False  # something can still move without a person (or a long wait)
    forgotten: int = 0  # projects removed: torn down everywhere and forgotten


def expire(ctx: Context) -> int:
    with ctx.db.transaction() as session:
        return len(deciding.expire_due(session, ctx))


def run_once(ctx: Context, project: str | None = None, *, poll: bool = True) -> PassReport:
    report = PassReport()
    report.expired = expire(ctx)
    if poll:
        report.poll = polling.poll(ctx, [project] if project else None)
    report.moved, report.busy = advance(ctx, project)
    report.forgotten = removing.finish_all(ctx)  # projects being removed, once torn down
    report.checked = drifting.check_due(ctx, project)
    return report


def advance(ctx: Context, project: str | None = None) -> tuple[int, bool]:
    """Change sets whose promotion gate passed go on (or end, when it failed), then one tick of
    the deployments, then the gates again if a deployment moved (it may be what one waits
    for). Returns (steps taken, anything still moving); a soak is time passing, not motion."""
    beat(ctx)
    gated = proceeding.recheck(ctx, project)
    moved, busy = ticking.tick(ctx, project)
    if moved:
        gated += proceeding.recheck(ctx, project)
    return moved + gated, busy or bool(gated)


def beat(ctx: Context) -> None:
    """The heartbeat (``store.heartbeats``): a pass is running now. A beat the store refuses
    (another replica's at the same moment, a store that is down) is lost, not an error: the
    next pass beats again."""
    try:
        with ctx.db.transaction() as session:
            heartbeats.beat(session, ctx.clock.now(), ticking.replica_id(ctx))
    except NebulaError as exc:
        log.debug("heartbeat not recorded: %s", exc.message)
