"""The sample projects in fixtures/projects validate cleanly and mean what their READMEs say."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import loading
from reconciler.cli.main import main
from reconciler.model import graph, references
from reconciler.model.specs import InstanceSize, ProcessType, ProjectFile
from tests.model import samples

PROJECTS = samples.project_fixtures()


def load(name: str) -> ProjectFile:
    return samples.valid(loading.project(name))


def test_there_are_the_three_sample_projects() -> None:
    assert {p.parent.name for p in PROJECTS} >= {"hello", "webapp", "shop"}


@pytest.mark.parametrize("path", PROJECTS, ids=lambda p: p.parent.name)
def test_project_validates_with_no_problem(path: Path) -> None:
    project = samples.valid(path.read_text(encoding="utf-8"))
    assert project.configs
    assert (path.parent / "README.md").read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("path", PROJECTS, ids=lambda p: p.parent.name)
def test_cli_says_the_project_is_valid(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"{path}: valid (")


def test_hello_is_one_http_service_in_one_environment() -> None:
    project = load("hello")
    assert project.environment_names == ("staging",)
    (config,) = project.configs
    (service,) = config.services
    assert config.databases == ()
    (web,) = service.processes
    assert (web.type, web.port, web.replicas, web.primary) == (ProcessType.HTTP, 8080, 1, True)


def test_webapp_production_raises_replicas_and_keeps_other_variables() -> None:
    project = load("webapp")
    assert [(e.name, e.protected) for e in project.environments] == [
        ("staging", False),
        ("production", True),
    ]
    staging, production = (project.environment(n) for n in ("staging", "production"))
    assert staging is not None and production is not None
    for config, replicas, size, level in (
        (staging, 1, InstanceSize.SMALL, "info"),
        (production, 3, InstanceSize.MEDIUM, "warning"),
    ):
        web = config.service("web")
        assert web is not None
        (process,) = web.processes
        assert (process.replicas, process.instance_size) == (replicas, size)
        assert web.variable_map == {
            "DATABASE_URL": "${{ db.DATABASE_URL }}",
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "LOG_LEVEL": level,
        }
    worker = production.service("worker")
    assert worker is not None
    assert [(p.name, p.type, p.replicas, p.primary) for p in worker.processes] == [
        ("worker", ProcessType.WORKER, 2, True)
    ]
    db = production.database("db")
    assert db is not None
    assert (db.instance_size, db.volume_size) == (InstanceSize.MEDIUM, "50Gi")


def test_webapp_deploys_the_database_first() -> None:
    config = load("webapp").configs[0]
    assert graph.apply_order(config) == ["cache", "db", "web", "worker"]
    # The worker only reaches the site by address: host() does not order deploys.
    assert graph.dependencies(config, "worker") == ("cache", "db")


def test_shop_has_what_its_readme_promises() -> None:
    project = load("shop")
    production = project.environment("production")
    staging = project.environment("staging")
    assert production is not None and staging is not None
    assert production.environment.protected
    assert not staging.environment.protected

    api = staging.service("api")
    assert api is not None
    assert api.release_command == ("bin/migrate",)
    assert api.release_command_timeout == 900
    nightly = next(p for p in api.processes if p.type is ProcessType.CRON)
    assert nightly.schedule == "0 3 * * *"
    assert api.depends_on == ("payments",)
    kinds = {r.kind for _, v in api.variables for r in references.references(v)}
    assert kinds == set(references.RefKind)
    assert references.parse(api.variable_map["GREETING"]) == (
        references.Literal("Prices in ${{ currency }} are literal, not a reference"),
    )

    search = staging.service("search")
    assert search is not None
    assert [(v.name, v.mount, v.accept_downtime) for v in search.volumes] == [
        ("index", "/var/lib/search", True)
    ]
    assert search.downtime_accepted

    prod_api = production.service("api")
    assert prod_api is not None
    web = next(p for p in prod_api.processes if p.name == "web")
    assert (web.replicas, web.instance_size) == (4, InstanceSize.LARGE)
    assert prod_api.variable_map["LOG_LEVEL"] == "warn"
    assert prod_api.variable_map["DATABASE_URL"] == "${{ db.DATABASE_URL }}"


@pytest.mark.parametrize("env", ["staging", "production"])
def test_shop_apply_order(env: str) -> None:
    config = load("shop").environment(env)
    assert config is not None
    assert graph.apply_order(config) == ["db", "payments", "search", "api", "frontend"]
    assert graph.dependencies(config, "api") == ("db", "payments", "search")
    assert graph.dependencies(config, "frontend") == ("api", "search")
