"""Applying change sets: atomic, drift refused, deployments in dependency order."""

from __future__ import annotations

from tests.gitops.shop import BASE
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula, image

ORDERED = f'''
[environments.staging]

[databases.db]
[databases.cache]

[services.web]
image = "{image("web")}"
[services.web.variables]
API = "${{{{ api.URL }}}}"

[services.api]
image = "{image("api")}"
[services.api.variables]
URL = "http://api"
DB = "${{{{ db.DATABASE_URL }}}}"
[services.api.deploy]
depends_on = ["search"]

[services.search]
image = "{image("search")}"

[services.admin]
image = "{image("admin")}"
'''


def test_apply_creates_deployments_in_dependency_order(nebula: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": ORDERED})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    order = [d["service"] for d in nebula.deployments()]
    # Databases first (by name), then along depends_on and ${{ svc.KEY }} edges, ties by name.
    assert order == ["cache", "db", "admin", "search", "api", "web"]


def test_a_dependent_waits_for_its_dependency_with_the_exact_message(
    nebula: Nebula, git_repo: GitRepo
) -> None:
    git_repo.commit({"nebula.toml": ORDERED})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    api = next(d for d in nebula.deployments() if d["service"] == "api")
    assert api["state"] == "pending"
    assert api["blocker"] == "waiting"
    # Of its dependencies in flight, the one that started first: db (databases go first).
    assert api["message"] == "Waiting for db to finish deploying (r-1)"
    nebula.settle()
    assert {d["state"] for d in nebula.deployments()} == {"healthy"}


def test_drift_refusal_in_an_unprotected_environment(nebula: Nebula, git_repo: GitRepo) -> None:
    text = BASE.replace("[services.api]\n", "[services.api]\nauto_deploy = false\n")
    git_repo.commit({"nebula.toml": text})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    first = next(c for c in nebula.changesets() if c["environment"] == "staging")
    nebula.ok(f"changeset apply {first['id']}")
    nebula.settle()
    # Two drafts staged against the same live value; applying one drifts the other.
    git_repo.commit(
        {"nebula.toml": text.replace('LOG_LEVEL = "info"', 'LOG_LEVEL = "debug"')}, "debug"
    )
    nebula.reconcile()
    draft = [c for c in nebula.changesets() if c["environment"] == "staging"][-1]
    assert draft["state"] == "draft"
    assert draft["lines"][0]["before"] == "info"
    # Roll the live value forward underneath the draft with a redeploy of a different release.
    with nebula.ctx.db.transaction() as session:
        from reconciler.store import schema

        unit = (
            session.query(schema.Unit)
            .filter_by(name="api")
            .join(schema.Environment)
            .filter(schema.Environment.name == "staging")
            .one()
        )
        assert unit.active_release is not None
        config = dict(unit.active_release.config)
        spec = dict(config["spec"])
        spec["variables"] = [["LOG_LEVEL", "trace"], ["DATABASE_URL", "${{ db.DATABASE_URL }}"]]
        config["spec"] = spec
        unit.active_release.config = config
    refused = nebula.cli(f"changeset apply {draft['id']}")
    assert refused.code == 1
    assert refused.err == (
        f"error: Change set {draft['id']} not applied: 1 line drifted since staged: "
        "api variables.LOG_LEVEL (staged with 'info', now 'trace'). "
        "Push again or restage to replace this change set.\n"
    )
    shown = nebula.json(f"changeset show {draft['id']}")["changeset"]
    assert shown["state"] == "draft"
    assert [line["drifted"] for line in shown["lines"]] == [True]
    assert [d for d in nebula.deployments() if d["changeset_id"] == draft["id"]] == []


def test_discard_and_show(nebula: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": BASE})
    nebula.ok(f"project add shop --repo {git_repo.url}")
    nebula.reconcile()
    prod = next(c for c in nebula.changesets() if c["environment"] == "production")
    nebula.ok("member add ada --role admin")
    nebula.ok(f"changeset discard {prod['id']} --as ada")
    shown = nebula.json(f"changeset show {prod['id']}")["changeset"]
    assert shown["state"] == "discarded"
    assert shown["note"] == "Discarded by ada"
    again = nebula.cli(f"changeset discard {prod['id']}")
    assert again.code == 1
    assert "only a draft or a change set pending approval can be discarded" in again.err
    missing = nebula.cli("changeset show 999")
    assert (missing.code, missing.err) == (
        1,
        "error: No change set 999\nhint: list them with: nebula changesets\n",
    )
