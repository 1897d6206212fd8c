"""What every route needs, held on the app rather than in globals (tests build several apps)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request

from reconciler.context import Context
from reconciler.errors import NotFoundError

if TYPE_CHECKING:
    from reconciler.scheduling import Scheduler
    from reconciler.web.metrics import Metrics

_ID = re.compile(r"^[0-9]{1,18}$")


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


def parse_id(text: str, what: str) -> int:
    """Ids in paths are strings of digits (JSON ids are strings); anything else names nothing."""
    if not _ID.match(text):
        raise NotFoundError(f"No {what} {text!r}: {what} ids are numbers")
    return int(text)
