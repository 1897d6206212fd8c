"""Suspensions (``nebula suspend``): who holds a project or an environment, when and why.
Read by every status view, so kept apart from ``projects`` and its validator."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reconciler.core import messages
from reconciler.store import schema


@dataclass(frozen=True)
class Suspension:
    """Who suspended a project or an environment, when and why (``nebula suspend``)."""

    by: str
    at: datetime
    reason: str

    @property
    def message(self) -> str:
        return messages.suspended(self.by, self.at, self.reason)


def suspension_of(row: schema.Project | schema.Environment) -> Suspension | None:
    """``row``'s own suspension (an environment's, not its project's)."""
    if row.suspended_by is None or row.suspended_at is None:
        return None
    return Suspension(row.suspended_by, row.suspended_at, row.suspended_reason or "")


def suspended(env: schema.Environment) -> Suspension | None:
    """What holds ``env``: its project's suspension, else its own; None when neither is."""
    return suspension_of(env.project) or suspension_of(env)
