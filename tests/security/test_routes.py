"""The status page only reads: no route outside ``/api/``, ``/hooks/`` and ``/slack/`` takes
anything but GET, every page refuses other methods without changing anything, and nothing on
a page (a form, a script) could send a write."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security.acting import Acting, build
from tests.security.crawling import crawl_pages
from tests.security.world import app_routes

# ... and signing out of the page (single sign-on: it ends the session of the cookie it comes
# with, and SameSite=Lax keeps another site's form from sending that cookie).
WRITE_PREFIXES = ("/api/", "/hooks/", "/slack/", "/logout")
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("routes")
    for nebula in nebula_with(tmp):
        yield from build(nebula, GitRepo(tmp / "repo", bare=False))


@pytest.fixture(scope="module")
def pages(acting: Acting) -> dict[str, str]:
    """Every page reachable from ``/``, by path."""
    found: dict[str, str] = {}

    def get(method: str, path: str) -> object:
        response = acting.http.request(method, path, headers={"Accept": "text/html"})
        assert response.status_code == 200, path
        found[path] = response.text
        return response

    crawl_pages(get)
    return found


def _store_size(acting: Acting) -> tuple[int, ...]:
    with acting.nebula.ctx.db.transaction() as session:
        return tuple(
            session.query(table).count()
            for table in (schema.Event, schema.Deployment, schema.Approval, schema.ChangeSet)
        )


def test_only_api_hooks_and_slack_routes_take_anything_but_get(acting: Acting) -> None:
    routes = app_routes(create_app(acting.nebula.ctx))
    assert any(path == "/" for path, _ in routes), "the enumeration found the pages"
    writable = sorted(
        (path, sorted(methods - {"GET", "HEAD"}))
        for path, methods in routes
        if methods - {"GET", "HEAD"}
    )
    assert writable, "the enumeration found the write routes"
    assert [w for w in writable if not w[0].startswith(WRITE_PREFIXES)] == []


def test_the_crawl_reached_every_kind_of_page(pages: dict[str, str]) -> None:
    kinds = {re.sub(r"/[^/]+$", "/{}", p) for p in pages if not p.startswith("/static/")}
    assert {"/", "/projects/{}", "/deployments/{}", "/changesets/{}"} <= kinds


@pytest.mark.parametrize("method", WRITES)
def test_every_page_refuses_writes_and_nothing_changes(
    acting: Acting, pages: dict[str, str], method: str
) -> None:
    before = _store_size(acting)
    for path in pages:
        response = acting.http.request(method, path, content=b"x=1")
        # Under /api/ a write without a token is refused before anything else (401).
        refusals = (401, 404, 405) if path.startswith("/api/") else (404, 405)
        assert response.status_code in refusals, f"{method} {path}: {response.status_code}"
    assert _store_size(acting) == before


def test_no_page_holds_a_form_or_a_button(pages: dict[str, str]) -> None:
    for path, html in pages.items():
        if path.startswith("/static/"):
            continue
        assert not re.search(r"<\s*(form|button|input|textarea|select)\b", html, re.I), path
        assert not re.search(r"\son(click|submit)\s*=", html, re.I), path
        # Links are GETs; still, none points at a write route.
        assert not re.search(r'href="/(hooks|slack)/', html), path
        assert not re.search(
            r'href="[^"]*/(approve|reject|rollback|promote|redeploy|cancel)"', html
        )


def test_the_page_script_only_ever_reads(pages: dict[str, str]) -> None:
    scripts = [text for path, text in pages.items() if path.endswith(".js")]
    assert scripts, "the page loads a script"
    for script in scripts:
        assert not re.search(r"\b(POST|PUT|PATCH|DELETE)\b", script)
        assert not re.search(r"\bmethod\s*:", script)
        assert "XMLHttpRequest" not in script and "sendBeacon" not in script


def test_the_content_security_policy_forbids_form_posts_anywhere(acting: Acting) -> None:
    policy = acting.http.get("/").headers["content-security-policy"]
    assert "form-action 'none'" in policy
    assert "script-src 'self'" in policy
