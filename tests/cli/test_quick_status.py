"""A local ``nebula status`` on SQLite reads the store with plain ``sqlite3`` (``statusreads``,
through ``cli.quick``): the document must be the API act's own, field for field, for every
filter; and whatever the quick read does not answer goes to the act, which answers as always.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fixtures import loading
from reconciler import statusreads
from reconciler.cli import local, quick
from reconciler.client import http
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

ROUTED = (
    loading.project("hello")
    .replace("[environments.staging]\n", '[environments.staging]\ngateway = "infra/public"\n')
    .replace("port = 8080", 'port = 8080\ndomains = ["hello.example.com"]')
)


def _act(nebula: Nebula, path: str = "/api/v1/status", **query: str) -> tuple[int, Any]:
    """What the API's act answers (the ORM's read), in this process."""
    local.use(nebula.ctx)
    api = http.in_process(local.Transport(argparse.Namespace(actor=None)))
    response = api.client.get(path, params=query)
    return response.status_code, response.json()


def _quick(nebula: Nebula, project: str | None = None, env: str | None = None) -> Any:
    path = nebula.ctx.db.path
    assert path is not None
    return statusreads.status(path, project, env, nebula.clock.now())


@pytest.fixture
def world(nebula: Nebula, git_repos: GitRepoFactory) -> Nebula:
    """Projects in most of the states a status shows: serving, awaiting approval in a protected
    environment, autoscaled, routed, blocked by a bad push, suspended, drifted."""
    files = {
        "every": loading.project("every-process"),
        "scaled": loading.project("hello").replace(
            "port = 8080", "port = 8080\nautoscale = { min = 2, max = 6 }"
        ),
        "pair": loading.project("two-environments"),
        "routed": ROUTED,
        "shop": loading.project("shop"),  # its secrets are not set: it waits on them
    }
    repos = {}
    for slug, text in files.items():
        repos[slug] = git_repos.local(slug)
        repos[slug].commit({"nebula.toml": text})
        nebula.ok(f"project add {slug} --repo {repos[slug].url}")
    nebula.ok("reconcile --until-idle --timeout 1m")
    repos["routed"].commit({"nebula.toml": "[environments.staging\n"}, "A broken file")
    nebula.ok("suspend every --env staging --reason 'a freeze of our own'")
    nebula.ok("reconcile --until-idle --timeout 1m")
    nebula.clock.advance(minutes=5)  # the heartbeat is stale by now
    return nebula


def test_the_quick_read_is_the_acts_document_for_every_filter(world: Nebula) -> None:
    code, whole = _act(world)
    assert code == 200
    assert [p["slug"] for p in whole["projects"]] == ["every", "pair", "routed", "scaled", "shop"]
    shown = {p["slug"]: p for p in whole["projects"]}
    # The world holds what it is meant to (else the comparison proves little).
    assert shown["routed"]["blocker"] is not None
    assert shown["every"]["environments"][0]["suspended"]["reason"] == "a freeze of our own"
    pair = {e["name"]: e for e in shown["pair"]["environments"]}
    assert pair["production"]["services"][0]["deployment"]["approval_id"] is not None
    assert any(
        p["autoscale"] is not None
        for e in shown["scaled"]["environments"]
        for s in e["services"]
        for p in s["processes"]
    )
    assert shown["routed"]["environments"][0]["services"][0]["urls"] == [
        "https://hello.example.com"
    ]
    assert whole["reconciler"]["stale"] is True

    assert _quick(world) == whole
    for slug in shown:
        assert _quick(world, slug) == _act(world, project=slug)[1]
        for env in shown[slug]["environments"]:
            name = env["name"]
            assert _quick(world, slug, name) == _act(world, project=slug, env=name)[1]
            assert _quick(world, None, name) == _act(world, env=name)[1]
    assert _quick(world, "pair") == _act(world, "/api/v1/projects/pair/status")[1]


def test_the_command_reads_quickly_and_prints_what_the_act_would(world: Nebula) -> None:
    assert world.json("status") == _act(world)[1]
    assert world.ok("status pair --env production").out.startswith("pair  commit ")


def test_what_the_quick_read_cannot_answer_goes_to_the_act(world: Nebula, tmp_path: Path) -> None:
    assert _quick(world, "nowhere") is None
    assert _quick(world, "pair", "nowhere") is None
    missing = world.cli("status nowhere")
    assert (missing.code, missing.err.splitlines()[0]) == (1, "error: No project named 'nowhere'")
    no_env = world.cli("status pair --env nowhere")
    assert no_env.code == 1
    assert no_env.err.startswith("error: Project 'pair' has no environment 'nowhere'")
    # A store at another revision of the schema is not read by a code that does not know it.
    path = world.ctx.db.path
    assert path is not None
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    assert _quick(world) is None
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0015'")
    assert statusreads.status(tmp_path / "none.db", None, None, world.clock.now()) is None


def test_a_command_that_names_someone_goes_to_the_act(world: Nebula) -> None:
    world.ok("member add alice --role viewer")
    refused = world.cli("status --as ghost")
    answered = world.cli("status --as alice --json")
    assert (refused.code, answered.code) == (1, 0)
    assert "ghost" in refused.err
    assert answered.json == _act(world)[1]


def test_a_store_that_is_not_a_sqlite_file_is_read_by_the_act(world: Nebula) -> None:
    quick.pin(None, world.clock)  # as on PostgreSQL: the act reads it
    try:
        assert world.ctx.db.path is not None
        transport = quick.Transport(argparse.Namespace(actor=None))
        api = http.in_process(transport)
        assert api.get("/api/v1/status")["projects"][0]["slug"] == "every"
        assert transport._full is not None  # the act answered
    finally:
        local.use(world.ctx)
