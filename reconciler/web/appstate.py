"""What every route needs, held on the app rather than in globals (tests build several apps)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from reconciler.context import Context
from reconciler.numbers import parse_id as parse_id  # ids in paths: ASCII digits, else a 404
from reconciler.scheduling import Scheduler
from reconciler.web.metrics import Metrics


@dataclass
class AppState:
    ctx: Context
    metrics: Metrics
    scheduler: Scheduler | None = None

    def wake(self) -> None:
        """A write may have made something movable: tick now rather than within a second."""
        if self.scheduler is not None:
            self.scheduler.wake_tick()


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.nebula
    return state
