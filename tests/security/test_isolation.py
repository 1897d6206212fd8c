"""A nebula.toml reaches only its own project: another project's secrets are not set for it
(a ``configuration`` blocker naming the secret), and another project's services and databases
do not exist for it (a validation error naming the reference, nothing staged)."""

from __future__ import annotations

import pytest

from fixtures import loading
from reconciler import reconciling
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

BLOG = loading.project("blog-search")


def shop(variables: str = "", extra: str = "") -> str:
    return (
        loading.project("two-environments")
        + f'\n[services.api.variables]\nLOG_LEVEL = "info"\n{variables}\n{extra}'
    )


def _two_projects(nebula: Nebula, git_repos: GitRepoFactory, shop_text: str) -> None:
    blog = git_repos.local("blog")
    blog.commit({"nebula.toml": BLOG}, "Blog")
    nebula.ok(f"project add blog --repo {blog.url}")
    _secret(nebula, "blog", "staging", "BLOG_KEY", "blog-only-value")
    shop_repo = git_repos.local("shop")
    shop_repo.commit({"nebula.toml": shop_text}, "Shop")
    nebula.ok(f"project add shop --repo {shop_repo.url}")


def _secret(nebula: Nebula, project: str, env: str, name: str, value: str) -> None:
    from reconciler.admin import projects, secrets

    with nebula.ctx.db.transaction() as session:
        row = projects.get(session, project)
        secrets.put(session, nebula.clock, nebula.ctx.vault, row.id, env, name, value)


def _passes(nebula: Nebula, n: int = 6) -> None:
    for _ in range(n):
        reconciling.run_once(nebula.ctx)
        nebula.clock.advance(seconds=1)


def test_another_projects_secret_is_not_set_for_this_one(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _two_projects(nebula, git_repos, shop('KEY = "${{ secret.BLOG_KEY }}"'))
    _passes(nebula)
    assert nebula.unit("staging", "search", "blog")["active_release"] == "r-1"
    held = nebula.unit("staging", "api")["deployment"]
    assert held["state"] in ("pending", "admitted") and held["blocker"] == "configuration"
    assert held["message"] == (
        "Secret BLOG_KEY is not set for shop/staging "
        "(set it with: nebula secret set shop staging BLOG_KEY)"
    )
    nebula.clock.advance(minutes=6)  # the readiness timeout: it fails, naming the secret
    _passes(nebula, 2)
    (failed,) = [d for d in nebula.deployments() if d["environment"] == "staging"]
    assert (failed["state"], failed["blocker"]) == ("failed", "configuration")
    assert failed["message"] == (
        "Secret BLOG_KEY is not set for shop/staging. "
        "Nothing was serving before; nothing is serving now."
    )


def test_a_secret_of_another_environment_is_not_set_for_this_one(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _two_projects(nebula, git_repos, shop('KEY = "${{ secret.PROD_KEY }}"'))
    _secret(nebula, "shop", "production", "PROD_KEY", "production-only-value")
    _passes(nebula)
    held = nebula.unit("staging", "api")["deployment"]
    assert held["blocker"] == "configuration"
    assert held["message"].startswith("Secret PROD_KEY is not set for shop/staging")


@pytest.mark.parametrize(
    ("variables", "extra", "expected"),
    [
        (
            'KEY = "${{ search.API_KEY }}"',
            "",
            "${{ search.API_KEY }} names unknown service or database 'search'",
        ),
        (
            'PASSWORD = "${{ blogdb.PGPASSWORD }}"',
            "",
            "${{ blogdb.PGPASSWORD }} names unknown service or database 'blogdb'",
        ),
        (
            'URL = "http://${{ host(search) }}"',
            "",
            "${{ host(search) }} names unknown service 'search'",
        ),
        (
            "",
            '[services.api.deploy]\ndepends_on = ["search"]\n',
            "depends_on names 'search', which is not a service or database of this file",
        ),
        (
            'KEY = "${{ secret.nebula.database-password.blogdb }}"',
            "",
            "unknown reference '${{ secret.nebula.database-password.blogdb }}'",
        ),
    ],
    ids=["service-variable", "database-password", "host", "depends-on", "reserved-secret"],
)
def test_another_projects_services_do_not_exist_for_this_one(
    nebula: Nebula, git_repos: GitRepoFactory, variables: str, extra: str, expected: str
) -> None:
    _two_projects(nebula, git_repos, shop(variables, extra))
    _passes(nebula)
    project = nebula.status("shop")
    assert project["blocker"] == "configuration"
    assert expected in project["message"]
    assert project["message"].startswith("nebula.toml at ")
    assert "nebula.toml:" in project["message"], "the problem's location is named"
    assert nebula.changesets("shop") == [], "nothing was staged"
    assert nebula.deployments("shop") == []
    assert nebula.unit("staging", "search", "blog")["active_release"] == "r-1"
