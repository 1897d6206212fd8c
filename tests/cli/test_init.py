"""``nebula init`` (behaviour.md "Import and templates (1.2)", issue 29): a commented starter
nebula.toml from a template shipped in the package; ``--list`` lists them; an existing file is
never overwritten. Each template validates without a warning, and a repository holding only it
deploys to healthy in every environment on the embedded defaults (SQLite, the simulated
cluster)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reconciler.cli import starters
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["web", "web-redis", "web-worker-postgres"]
ABOUT = {
    "web": "A web service: one HTTP service, a staging environment and a protected production",
    "web-redis": "A web service with a Redis cache",
    "web-worker-postgres": "A web service, a background worker and a PostgreSQL database",
}
# What each starts, per environment: its services and databases.
UNITS = {
    "web": {"web"},
    "web-redis": {"web", "cache"},
    "web-worker-postgres": {"web", "worker", "db"},
}


def shipped(name: str) -> str:
    return (ROOT / "reconciler" / "samples" / "templates" / f"{name}.toml").read_text("utf-8")


def test_list_names_each_template_with_what_it_starts(nebula: Nebula) -> None:
    listed = nebula.json("init --list")

    assert listed == {"templates": [{"name": n, "description": ABOUT[n]} for n in NAMES]}
    table = nebula.ok("init --list").out.splitlines()
    assert table[0].split() == ["TEMPLATE", "DESCRIPTION"]
    assert [row.split(maxsplit=1) for row in table[1:]] == [[n, ABOUT[n]] for n in NAMES]


@pytest.mark.parametrize("name", NAMES)
def test_a_template_validates_and_deploys_to_healthy_everywhere(
    nebula: Nebula, git_repo: GitRepo, tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "app"
    written = nebula.cli(f"init {folder} --template {name}")
    assert (written.code, written.err) == (0, "")
    assert written.out.splitlines()[0] == (
        f"wrote {folder}/nebula.toml (template {name}: {ABOUT[name]})"
    )
    text = (folder / "nebula.toml").read_text("utf-8")
    assert text == shipped(name)
    checked = nebula.json(f"validate {folder}/nebula.toml")
    assert (checked["valid"], checked["problems"]) == (True, []), "not even a warning"

    git_repo.commit({"nebula.toml": text}, f"Start from the {name} template")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    for _ in range(3):  # staging first; production once staging proved it, and approved
        nebula.settle()
        for approval in [a for a in nebula.approvals() if a["state"] == "pending"]:
            nebula.ok(f"approve {approval['id']}")

    environments = nebula.status()["environments"]
    assert [e["name"] for e in environments] == ["staging", "production"]
    for environment in environments:
        services = environment["services"]
        assert {s["name"] for s in services} == UNITS[name], environment["name"]
        assert {s["active_release"] for s in services} == {"r-1"}, environment["name"]
    deployments = nebula.deployments()
    assert len(deployments) == 2 * len(UNITS[name])
    assert {d["state"] for d in deployments} == {"healthy"}


def test_init_writes_here_by_default_and_never_overwrites(
    nebula: Nebula, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = nebula.ok("init")
    assert first.out.splitlines()[0] == f"wrote nebula.toml (template web: {ABOUT['web']})"
    (tmp_path / "nebula.toml").write_text("# mine\n", encoding="utf-8")

    again = nebula.cli("init --template web-redis")

    assert (again.code, again.out, again.err) == (
        1,
        "",
        "error: nebula.toml already exists; nebula init does not overwrite it\n"
        "hint: check it with: nebula validate nebula.toml; or give another folder: "
        "nebula init DIR --template web-redis\n",
    )
    assert (tmp_path / "nebula.toml").read_text("utf-8") == "# mine\n"
    (tmp_path / "taken").write_text("a file, not a folder\n", encoding="utf-8")
    blocked = nebula.cli("init taken")
    assert (blocked.code, blocked.err) == (
        1,
        "error: cannot make the folder taken: File exists\n",
    )


def test_an_unknown_template_is_bad_usage_naming_the_closest(
    nebula: Nebula, tmp_path: Path
) -> None:
    refused = nebula.cli(f"init {tmp_path / 'app'} --template web-reddis")

    assert (refused.code, refused.err) == (
        2,
        "error: no template 'web-reddis'; did you mean 'web-redis'?\n"
        "hint: templates: web, web-redis, web-worker-postgres (nebula init --list)\n",
    )
    assert not (tmp_path / "app").exists()


def test_the_templates_ship_in_the_package_and_teach_the_format() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "samples/templates/*.toml" in config["tool"]["setuptools"]["package-data"]["reconciler"]
    assert [t.name for t in starters.templates()] == NAMES
    for template in starters.templates():
        lines = template.text.splitlines()
        # Each says how to check it, and explains most of what it sets: a comment on the
        # setting's line or on the line above it.
        assert "nebula validate nebula.toml" in template.text, template.name
        settings = [n for n, line in enumerate(lines) if "=" in line and not line.startswith("#")]
        explained = [n for n in settings if "#" in lines[n] or lines[n - 1].startswith("#")]
        assert len(explained) * 3 >= len(settings) * 2, (template.name, explained, settings)
