"""One reconcile pass: expire approvals, poll, advance deployments. Shared by
``nebula reconcile`` and the scheduler of ``nebula serve``."""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.context import Context
from reconciler.engine import ticking
from reconciler.gitops import polling
from reconciler.requests import deciding, removing


@dataclass
class PassReport:
    expired: int = 0
    poll: polling.PollReport = field(default_factory=polling.PollReport)
    moved: int = 0  # deployment steps taken
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
    report.moved, report.busy = ticking.tick(ctx, project)
    report.forgotten = removing.finish_all(ctx)  # projects being removed, once torn down
    return report
