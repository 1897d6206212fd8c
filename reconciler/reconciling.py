"""One reconcile pass: expire approvals, poll, advance deployments. Shared by
``nebula reconcile`` and the scheduler of ``nebula serve``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.context import Context
from reconciler.gitops import deciding, polling


@dataclass
class PassReport:
    expired: int = 0
    poll: polling.PollReport = field(default_factory=polling.PollReport)
    moved: int = 0  # deployment steps taken
    busy: bool = False  # something can still move without a person (or a long wait)


# The engine registers its tick here (issue 4); until then deployments stop in their first state.
Tick = Callable[[Context, str | None], tuple[int, bool]]
_ENGINE: list[Tick] = []


def register_engine(tick: Tick) -> None:
    _ENGINE[:] = [tick]


def expire(ctx: Context) -> int:
    with ctx.db.transaction() as session:
        return len(deciding.expire_due(session, ctx))


def run_once(ctx: Context, project: str | None = None, *, poll: bool = True) -> PassReport:
    report = PassReport()
    report.expired = expire(ctx)
    if poll:
        report.poll = polling.poll(ctx, [project] if project else None)
    for tick in _ENGINE:
        report.moved, report.busy = tick(ctx, project)
    return report
