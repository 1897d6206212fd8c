"""The simulated cluster keeps a Secret's values encrypted in the store, with the server's
key, as the store keeps every other secret; what it hands back (``objects``) is the Secret as
applied, and applying the same Secret again changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from reconciler.runtimes.sealing import SEALED
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store import schema
from tests.gitops.shop import BASE
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula


def _secret_rows(nebula: Nebula) -> list[schema.ClusterObject]:
    with nebula.ctx.db.transaction() as session:
        rows = list(
            session.scalars(
                select(schema.ClusterObject).where(schema.ClusterObject.kind == "Secret")
            )
        )
        session.expunge_all()
        return rows


def test_secret_values_are_stored_encrypted_and_read_back_in_the_clear(
    nebula: Nebula, git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git_repo.commit({"nebula.toml": BASE}, "First")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    rows = _secret_rows(nebula)
    assert rows, "the shop's database has a credentials Secret"
    for row in rows:
        assert "data" not in row.body and "stringData" not in row.body
        assert row.body[SEALED].startswith("gAAAAA")  # a Fernet token
        assert row.body["metadata"]["name"], "what is not secret stays readable"
    applied = [
        o for o in nebula.ctx.clusters.simulated().objects("shop-staging") if o["kind"] == "Secret"
    ]
    assert applied and all(("data" in o or "stringData" in o) and SEALED not in o for o in applied)
    stamps = {(r.namespace, r.name): r.updated_at for r in rows}
    nebula.clock.advance(60)
    applies: list[str] = []
    put = SimulatedCluster._put_all

    def counting(self: SimulatedCluster, conn: Any, objects: Any) -> None:
        objects = list(objects)
        applies.extend(kind for (_, kind, _), _ in objects)
        put(self, conn, objects)

    monkeypatch.setattr(SimulatedCluster, "_put_all", counting)
    nebula.ok("redeploy shop db --env staging")
    nebula.settle()
    again = {(r.namespace, r.name): r.updated_at for r in _secret_rows(nebula)}
    assert "Secret" in applies, "the redeploy applied its Secret again"
    assert {k: v for k, v in again.items() if k in stamps} == stamps, "...and changed nothing"
