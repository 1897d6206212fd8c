"""fixtures/projects/chain pushed and deployed: c reads b.X, b reads a.K, web reads host(a),
pay reads the secret STRIPE_KEY; staging and a protected production."""

from __future__ import annotations

import base64
import io
import sys
from collections.abc import Mapping
from typing import Any

from fixtures import loading
from reconciler.runtimes.simulated import SimulatedCluster
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, Result

SECRET_VALUE = "sk_live_first_4f9a"  # what must never be shown anywhere but the cluster


def chain(edits: Mapping[str, str] | None = None) -> str:
    return loading.project("chain", edits)


def set_secret(nebula: Nebula, env: str, value: str, *args: str) -> Result:
    """``echo -n VALUE | nebula secret set shop ENV STRIPE_KEY ARGS``."""
    stdin = sys.stdin
    sys.stdin = io.StringIO(value)
    try:
        return nebula.ok("secret", "set", "shop", env, "STRIPE_KEY", *args)
    finally:
        sys.stdin = stdin


def register(
    nebula: Nebula, git_repo: GitRepo, text: str | None = None, *, healthy: bool = True
) -> None:
    """Members ada and bo (admins), the project with its secret set in both environments,
    settled: staging healthy unless not ``healthy`` (production's first deploy waits for its
    approval)."""
    nebula.ok("member add ada --role admin")
    nebula.ok("member add bo --role admin")
    git_repo.commit({"nebula.toml": text or chain()}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    for env in ("staging", "production"):
        set_secret(nebula, env, SECRET_VALUE)
    nebula.settle()
    if healthy:
        staging = {d["state"] for d in nebula.deployments() if d["environment"] == "staging"}
        assert staging == {"healthy"}


def push(nebula: Nebula, git_repo: GitRepo, text: str, message: str = "Change") -> None:
    git_repo.commit({"nebula.toml": text}, message)
    nebula.reconcile()


def in_env(rows: list[dict[str, Any]], env: str = "staging") -> list[dict[str, Any]]:
    return [r for r in rows if r["environment"] == env]


def cluster(nebula: Nebula) -> SimulatedCluster:
    simulated: SimulatedCluster = nebula.ctx.clusters.simulated()
    return simulated


def variables(nebula: Nebula, service: str, release: str, env: str = "staging") -> dict[str, str]:
    """The data of the release's variables ConfigMap on the cluster."""
    name = f"{service}-{release.replace('-', '')}-vars"
    found = [o for o in cluster(nebula).objects(f"shop-{env}") if o["metadata"]["name"] == name]
    assert found, f"no ConfigMap {name}"
    return dict(found[0]["data"])


def secret_on_cluster(nebula: Nebula, env: str = "staging") -> str:
    """STRIPE_KEY as the environment's nebula-secrets Secret holds it."""
    found = [
        o
        for o in cluster(nebula).objects(f"shop-{env}")
        if o["kind"] == "Secret" and o["metadata"]["name"] == "nebula-secrets"
    ]
    assert found, "no nebula-secrets Secret"
    return base64.b64decode(found[0]["data"]["STRIPE_KEY"]).decode()
