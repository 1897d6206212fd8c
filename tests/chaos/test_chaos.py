"""The chaos suite: three ``nebula serve`` replicas on one PostgreSQL, twenty projects pushed
and approved while replicas are SIGKILLed and restarted, PostgreSQL restarts once, Slack and
the Kubernetes API fail now and then. After a quiet period with every replica up, the store
and Slack must show that nothing was lost, doubled or skipped (``invariants``).

The run is seeded: the seed is printed and written with the counts to
``test-artifacts/chaos-counts.txt``; ``TEST_CHAOS_SEED=N`` replays the same decisions (the
timing of processes differs from run to run, so a replay is close, not identical).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from tests.chaos import invariants, projects
from tests.chaos.replicas import Replica, Replicas
from tests.chaos.scenario import Plan, Project, Scenario, prepare_store, register
from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRestError
from tests.infra.kubeserver import KubeAPI
from tests.infra.podstatus import Behaviour
from tests.infra.postgres import PostgresServer
from tests.plugins.git import GitRepoFactory, free_port
from tests.plugins.slack import CHANNEL_ID, SLACK_SIGNING_SECRET, SLACK_TOKEN, SlackServer
from tests.runtimes.harness import http_server
from tests.web.world import serve_env

pytestmark = [pytest.mark.chaos, pytest.mark.postgres, pytest.mark.kube, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
REPLICAS = 3
PROJECTS = 20
# All twenty projects deploy to the real API server through the fault proxy; set
# TEST_CHAOS_CLUSTER=simulated to run the same chaos without a Kubernetes control plane.
CLUSTER = "kubernetes"
POLL_INTERVAL = 2  # seconds, per project


def _seed() -> int:
    given = os.environ.get("TEST_CHAOS_SEED", "").strip()
    return int(given) if given else random.SystemRandom().randrange(1 << 32)


def _environment(tmp_path: Path, database_url: str, slack: SlackServer) -> dict[str, str]:
    env = serve_env(
        tmp_path,
        database_url=database_url,
        secret_key=Fernet.generate_key().decode(),
        approval_ttl="30s",
        slack_bot_token=SLACK_TOKEN,
        slack_api_url=slack.base_url,
        slack_channel=CHANNEL_ID,
        slack_signing_secret=SLACK_SIGNING_SECRET,
        public_url="https://nebula.example.com",
    )
    return env


def _durable(database_url: str) -> None:
    """Commits acknowledged survive a crash of the server, as in production: the session's
    server runs with ``synchronous_commit = off`` for speed, which would lose the last
    fraction of a second of commits when the chaos stops it in ``immediate`` mode."""
    url = make_url(database_url)
    with psycopg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'ALTER DATABASE "{url.database}" SET synchronous_commit = on')


def _write_report(
    findings: invariants.Findings,
    scenario: Scenario,
    replicas: Replicas,
    slack: SlackServer,
    seconds: dict[str, float],
    still_open: dict[str, Any],
) -> str:
    counts = {
        "seed": scenario.plan.seed,
        "replicas": REPLICAS,
        "projects": scenario.plan.projects,
        "projects on kubernetes": scenario.plan.kube_projects,
        "seconds": seconds,
        "replica kills (SIGKILL)": replicas.kills,
        "replica restarts": replicas.restarts,
        "restarts under a new replica id": replicas.takeovers,
        "replica starts that failed (and were tried again)": replicas.failed_starts,
        "driver actions": dict(sorted(scenario.log.actions.items())),
        "chat.postMessage calls (answered or not)": len(slack.posts),
        **findings.counts,
        "problems": findings.problems,
        "open at the end of the quiet period": still_open,
    }
    text = json.dumps(counts, indent=2, default=str)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "chaos-diagnostics.txt").unlink(missing_ok=True)
    (ARTIFACTS / "chaos-counts.txt").write_text(text + "\n", encoding="utf-8")
    (ARTIFACTS / "chaos-timeline.txt").write_text(
        "\n".join(scenario.log.timeline) + "\n", encoding="utf-8"
    )
    return text


@dataclass
class Cluster:
    """Where the projects deploy: the simulated cluster, or the real API server through the
    fault proxy (with the test kubelet running every pod and answering readiness checks)."""

    env: dict[str, str]
    contexts: dict[str, str]
    namespaces: Callable[[list[str]], None] = lambda slugs: None
    proxy: FaultProxy | None = None


@contextlib.contextmanager
def _cluster(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    if kind == "simulated":
        faults = tmp_path / "faults.toml"
        faults.write_text(
            f'[images."{projects.BROKEN_API}"]\nfail = "image-pull"\n', encoding="utf-8"
        )
        yield Cluster(
            {"NEBULA_SIMULATED_FAULTS": str(faults), "NEBULA_SIMULATED_DELAY": "0.2s"}, {}
        )
        return
    kube_api: KubeAPI = request.getfixturevalue("kube_api")
    kubelet: TestKubelet = request.getfixturevalue("kubelet")
    proxy: FaultProxy = request.getfixturevalue("fault_proxy")
    assert proxy.kubeconfig is not None

    def delete(slugs: list[str]) -> None:
        for slug in slugs:
            for env in projects.ENVIRONMENTS:
                with contextlib.suppress(KubeRestError):
                    kube_api.rest.delete(f"/api/v1/namespaces/{slug}-{env}")

    with http_server() as port:
        kubelet.default(Behaviour.RUNNING, serve_port=port)
        kubelet.script(projects.BROKEN_API, Behaviour.IMAGE_PULL)
        env = {
            "NEBULA_CLUSTER": "kubernetes",
            "KUBECONFIG": str(proxy.kubeconfig),
            "NEBULA_READINESS_TIMEOUT": "60s",
            "NEBULA_ROUTE_ACTIVATION_TIMEOUT": "20s",
        }
        yield Cluster(env, dict.fromkeys(projects.ENVIRONMENTS, proxy.context), delete, proxy)


def test_replicas_survive_kills_a_database_restart_and_a_flaky_cluster(
    tmp_path: Path,
    fresh_postgres_url: str,
    postgres_server: PostgresServer,
    slack_server: SlackServer,
    git_repos: GitRepoFactory,
    request: pytest.FixtureRequest,
) -> None:
    kind = os.environ.get("TEST_CHAOS_CLUSTER", CLUSTER)
    plan = Plan(seed=_seed(), kube_projects=PROJECTS if kind == "kubernetes" else 0)
    print(f"chaos seed: {plan.seed} (TEST_CHAOS_SEED={plan.seed} to replay)")
    _durable(fresh_postgres_url)
    with _cluster(kind, request, tmp_path) as cluster:
        env = _environment(tmp_path, fresh_postgres_url, slack_server) | cluster.env
        token = prepare_store(env)
        items = []
        for n in range(plan.projects):
            slug = f"chaos-{n:02d}"
            repo = git_repos.served(slug)
            repo.commit({"nebula.toml": projects.toml(slug, projects.Version())}, "First version")
            items.append(Project(slug, repo, kube=n < plan.kube_projects))
        register(env, items, cluster.contexts, POLL_INTERVAL)
        members = [
            Replica(
                f"r{n}",
                env | {"NEBULA_STATE_DIR": str(tmp_path / f"replica-{n}")},
                tmp_path / f"replica-{n}.log",
                free_port(),
            )
            for n in range(REPLICAS)
        ]
        replicas = Replicas(members, random.Random(plan.seed + 1))
        scenario = Scenario(
            plan,
            fresh_postgres_url,
            replicas,
            items,
            token,
            slack_server,
            postgres_server,
            cluster.proxy,
        )
        seconds: dict[str, float] = {}
        try:
            started = time.monotonic()
            replicas.start_all()
            scenario.run_chaos()
            seconds["chaos"] = round(time.monotonic() - started, 1)
            still_open = scenario.settle()
            seconds["quiet"] = round(time.monotonic() - started - seconds["chaos"], 1)
            codes = replicas.stop_all()
        finally:
            replicas.kill_all()
            scenario.close()
            _save_logs(members)
            cluster.namespaces([i.slug for i in items])

    rows = invariants.read(fresh_postgres_url)
    posts = invariants.posted_keys(slack_server.messages.values())
    edited = invariants.edited_keys(slack_server.messages.values())
    findings = invariants.check(rows, posts, len(slack_server.updates), edited)
    report = _write_report(findings, scenario, replicas, slack_server, seconds, still_open)
    print(report)
    if findings.problems:
        _diagnose(fresh_postgres_url, slack_server)

    assert not still_open, f"not quiet after {plan.quiet_timeout:.0f}s: {still_open}"
    assert codes == [0] * REPLICAS, codes
    assert findings.problems == []
    assert findings.counts["deployments"] >= 150


def _save_logs(members: list[Replica]) -> None:
    saved = ARTIFACTS / "chaos-logs"
    shutil.rmtree(saved, ignore_errors=True)
    saved.mkdir(parents=True, exist_ok=True)
    for replica in members:
        if replica.log_path.exists():
            shutil.copy(replica.log_path, saved / replica.log_path.name)


def _diagnose(url: str, slack: SlackServer) -> None:
    """What a failed check needs to be understood: every notice's row, Slack's messages and
    calls (the store itself is dropped with the test's database)."""
    details = {
        "notices": invariants.notice_rows(url, None),
        "messages": [
            {"ts": ts, "edited": m.get("edited", False), "metadata": m.get("metadata"),
             "text": m.get("text")}
            for (_, ts), m in sorted(slack.messages.items())
        ],
        "calls": [(c.method, c.args.get("ts"), c.args.get("metadata")) for c in slack.calls],
    }  # fmt: skip
    (ARTIFACTS / "chaos-diagnostics.txt").write_text(json.dumps(details, indent=1, default=str))
