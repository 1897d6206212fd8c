"""What runs where, at a glance: a grid of a project's environments (columns) by its
services and databases (rows). Each cell shows the active release, a short image, ``sync``
and any deployment in flight (with the approval it waits for).

``sync`` is read from the status view's ``"sync"`` field when there is one (drift detection
fills it: ``synced``, ``drifted``, ``unknown``); until then every cell says ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.core.states import DeploymentState

SYNC_UNKNOWN = "unknown"  # what a cell shows until drift detection reports a unit's sync


@dataclass(frozen=True)
class Cell:
    release: str | None
    image: str | None
    sync: str  # synced | drifted | unknown (the status view's ``sync``)
    state: str | None  # the deployment shown: in flight, or how the last one ended badly
    deployment_id: str | None
    approval_id: str | None
    blocker: str | None
    message: str | None
    status: str  # active, pending-teardown, ...
    urls: tuple[str, ...] = ()  # where the public reaches it (its routes)

    @property
    def in_flight(self) -> bool:
        return self.state is not None and not DeploymentState(self.state).is_final


@dataclass(frozen=True)
class Row:
    name: str
    kind: str
    cells: list[Cell | None]  # one per environment; None: not in that environment


@dataclass(frozen=True)
class Grid:
    environments: list[dict[str, Any]]  # name, protected
    rows: list[Row]


def _cell(unit: dict[str, Any]) -> Cell:
    d = unit["deployment"] or {}
    return Cell(
        release=unit["active_release"],
        image=unit["image"],
        sync=unit.get("sync") or SYNC_UNKNOWN,
        state=d.get("state"),
        deployment_id=d.get("id"),
        approval_id=d.get("approval_id"),
        blocker=d.get("blocker"),
        message=d.get("message"),
        status=unit["status"],
        urls=tuple(unit.get("urls") or ()),
    )


def grid(status: dict[str, Any]) -> Grid:
    """The grid of one project, from its ``statusviews.project_status``."""
    environments = status["environments"]
    names: dict[str, str] = {}  # row order: as the environments list them (databases first)
    for env in environments:
        for unit in env["services"]:
            names.setdefault(unit["name"], unit["kind"])
    rows = []
    for name, kind in names.items():
        cells: list[Cell | None] = []
        for env in environments:
            unit = next((u for u in env["services"] if u["name"] == name), None)
            cells.append(_cell(unit) if unit is not None else None)
        rows.append(Row(name, kind, cells))
    return Grid([{"name": e["name"], "protected": e["protected"]} for e in environments], rows)
