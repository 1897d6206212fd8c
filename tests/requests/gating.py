"""fixtures/projects/gated driven from outside: production promotes from staging with a 30m
soak; the simulated cluster fails the images of ``tests.engine.projects.FAULTS_TOML``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from fixtures import loading
from tests.plugins.git import GitRepo
from tests.plugins.nebula import DIGEST_C, Nebula, image

API_1 = image("api")
API_2 = image("api", DIGEST_C)
SOAK = timedelta(minutes=30)


def gated(edits: Mapping[str, str] | None = None, *, api: str = API_1) -> str:
    return loading.project("gated", {API_1: api, **(edits or {})})


def in_env(rows: list[dict[str, Any]], env: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["environment"] == env]


def production_changeset(nebula: Nebula) -> dict[str, Any]:
    return in_env(nebula.changesets(), "production")[-1]


def healthy_at(nebula: Nebula, service: str, release: str, env: str = "staging") -> datetime:
    """When that release's deployment went healthy (its ``finished_at``)."""
    found = [
        d
        for d in in_env(nebula.deployments(), env)
        if (d["service"], d["release"], d["state"]) == (service, release, "healthy")
    ]
    assert found, f"{service} {release} never went healthy in {env}"
    return datetime.fromisoformat(found[-1]["finished_at"].replace("Z", "+00:00"))


def last_healthy(nebula: Nebula, env: str = "staging") -> datetime:
    return max(
        datetime.fromisoformat(d["finished_at"].replace("Z", "+00:00"))
        for d in in_env(nebula.deployments(), env)
        if d["state"] == "healthy"
    )


def members(nebula: Nebula) -> None:
    nebula.ok("member add ada --role owner")
    nebula.ok("member add bo --role admin")
    nebula.ok("member add cy --role member")


def deployed(nebula: Nebula, git_repo: GitRepo) -> None:
    """Members, and the first version healthy in staging and (soaked, approved) production."""
    members(nebula)
    git_repo.commit({"nebula.toml": gated()}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.settle()
    nebula.clock.set(last_healthy(nebula) + SOAK)
    nebula.reconcile()
    pending = [a for a in nebula.approvals() if a["state"] == "pending"]
    assert len(pending) == 1
    nebula.ok(f"approve {pending[0]['id']} --as bo")
    nebula.settle()
    assert {d["state"] for d in nebula.deployments()} == {"healthy"}


def push(nebula: Nebula, git_repo: GitRepo, text: str, message: str = "Change") -> None:
    git_repo.commit({"nebula.toml": text}, message)
    nebula.reconcile()
