"""The live-state scenarios' installation: fixtures/projects/live-state deployed in both
environments (staging with ``self_heal = true``, a protected production without it), and
members of every role."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from fixtures import loading
from reconciler.store import schema
from reconciler.store.events import EventKind
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

STAGING, PRODUCTION = "shop-staging", "shop-production"
INTERVAL = 180  # NEBULA_DRIFT_INTERVAL's default, in seconds
LIVE = (EventKind.DRIFT, EventKind.SELF_HEAL)


def text(edits: dict[str, str] | None = None) -> str:
    return loading.project("live-state", edits)


def deployed(nebula: Nebula, git_repo: GitRepo) -> None:
    """Both environments at r-1, healthy, and each unit checked once since."""
    git_repo.commit({"nebula.toml": text()}, "First")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.ok("member add alice --role owner")
    nebula.ok("member add bob --role admin")
    nebula.ok("member add mia --role member")
    nebula.settle()
    (pending,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {pending['id']} --as alice")
    nebula.settle()
    assert {(d["environment"], d["state"]) for d in nebula.deployments()} == {
        ("staging", "healthy"),
        ("production", "healthy"),
    }


def later(nebula: Nebula, seconds: float = INTERVAL) -> None:
    """Time passes (a drift interval by default), then one reconcile pass."""
    nebula.clock.advance(seconds)
    nebula.reconcile()


def live_events(nebula: Nebula) -> list[tuple[str, str | None, str | None]]:
    """(kind, message, actor) of the drift and self-heal events, oldest first."""
    return [(e.kind, e.message, e.actor) for e in nebula.events() if e.kind in LIVE]


def notices(nebula: Nebula, kind: str = "unit-drifted") -> list[dict[str, Any]]:
    with nebula.ctx.db.transaction() as session:
        rows = session.scalars(
            select(schema.OutboxMessage)
            .where(schema.OutboxMessage.kind == kind)
            .order_by(schema.OutboxMessage.id)
        )
        return [dict(r.payload) for r in rows]


def live_object(nebula: Nebula, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    for obj in nebula.ctx.clusters.simulated().objects(namespace):
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    return None
