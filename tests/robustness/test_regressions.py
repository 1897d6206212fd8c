"""What the stateful machine found, pinned as plain examples.

A service removed from nebula.toml and later added back: polling crashed on the units table's
unique (environment, name) once the removed service had been torn down, and the torn-down
service's last release stayed ``active``.
"""

from __future__ import annotations

from typing import Any

from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.robustness.documents import Document, Service

BOTH = Document((Service("api"), Service("worker")))
WORKER_ONLY = Document((Service("worker"),))


def _push(nebula: Nebula, repo: GitRepo, doc: Document, message: str) -> None:
    repo.commit({"nebula.toml": doc.render()}, message)


def _staging(nebula: Nebula) -> dict[str, Any]:
    return {
        u["name"]: u
        for e in nebula.status()["environments"]
        if e["name"] == "staging"
        for u in e["services"]
    }


def _releases(nebula: Nebula, service: str, env: str = "staging") -> list[tuple[str, str]]:
    with nebula.ctx.db.transaction() as session:
        rows = (
            session.query(schema.Release)
            .join(schema.Unit, schema.Unit.id == schema.Release.unit_id)
            .join(schema.Environment, schema.Environment.id == schema.Unit.environment_id)
            .where(schema.Unit.name == service, schema.Environment.name == env)
            .order_by(schema.Release.number)
        )
        return [(r.name, r.status) for r in rows]


def test_a_service_added_back_after_its_teardown_deploys_again(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    _push(nebula, git_repo, BOTH, "Both")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    _push(nebula, git_repo, WORKER_ONLY, "Drop api")
    nebula.settle()
    assert set(_staging(nebula)) == {"worker"}
    assert _releases(nebula, "api") == [("r-1", "retired")], "nothing serves a torn-down api"

    _push(nebula, git_repo, BOTH, "api is back")
    nebula.settle()
    api = _staging(nebula)["api"]
    assert (api["active_release"], api["deployment"]) == ("r-2", None)
    assert _releases(nebula, "api") == [("r-1", "retired"), ("r-2", "active")]
    events = [
        e.message for e in nebula.events() if e.kind == "unit" and e.message.startswith("api")
    ]
    assert events[-1] == "api is back in nebula.toml"


def test_a_service_added_back_before_its_teardown_ran_is_not_torn_down(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    _push(nebula, git_repo, BOTH, "Both")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    cluster = nebula.ctx.clusters.simulated()
    cluster.set_reachable(False)  # the teardown has to wait
    _push(nebula, git_repo, WORKER_ONLY, "Drop api")
    nebula.reconcile()
    _push(nebula, git_repo, BOTH, "api is back")
    nebula.reconcile()
    cluster.set_reachable(True)
    nebula.settle()
    api = _staging(nebula)["api"]
    assert (api["active_release"], api["deployment"]) == ("r-2", None)
    assert [s for _, s in _releases(nebula, "api")] == ["retired", "active"]


def test_a_rejected_change_set_does_not_bring_a_removed_service_back(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    _push(nebula, git_repo, BOTH, "Both")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.ok("member add olga --role owner")
    nebula.settle()
    (first,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {first['id']} --as olga")
    nebula.settle()
    _push(nebula, git_repo, WORKER_ONLY, "Drop api")
    nebula.settle()
    (removal,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {removal['id']} --as olga")
    nebula.settle()
    _push(nebula, git_repo, BOTH, "api is back")
    nebula.settle()
    (back,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"reject {back['id']} --as olga")
    nebula.settle()
    production = {
        u["name"]
        for e in nebula.status()["environments"]
        if e["name"] == "production"
        for u in e["services"]
    }
    assert production == {"worker"}
    assert _staging(nebula)["api"]["active_release"] == "r-2"
