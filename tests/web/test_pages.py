"""The status page as HTML: what it shows, what it never shows, and that it only reads."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from reconciler.web.app import SECURITY_HEADERS
from tests.plugins.nebula import Nebula
from tests.timelines import WITHOUT_RELEASE
from tests.web.conftest import Shop
from tests.web.world import API_BROKEN, CANARY, shop_toml


def _text(html: str) -> str:
    """The page's visible text, roughly: tags removed, whitespace squeezed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_overview_lists_projects_with_a_health_summary_per_environment(
    shop: Shop, live: httpx.Client
) -> None:
    page = live.get("/")

    assert page.status_code == 200
    text = _text(page.text)
    assert "staging : 2 healthy" in text
    assert "production protected : 2 awaiting approval" in text
    assert 'href="/projects/shop"' in page.text


def test_the_project_page_shows_each_service_and_the_approval_waiting(
    shop: Shop, live: httpx.Client
) -> None:
    text = _text(live.get("/projects/shop").text)

    assert "Waiting for approval" in text
    # The project asked (a push); the commit's author is named beside it.
    assert "Requested by shop (push by Ada Lovelace &lt;ada@example.com&gt;) 9 s ago" in text
    assert re.search(
        r"api first_deploy \(none\) registry\.example\.com/shop/api@sha256:a{12}…", text
    )
    assert "Active release r-1" in text
    assert "web (http, 1 replica)" in text
    assert "postgres 16, small, 10Gi" in text


def test_secrets_and_database_credentials_show_as_masked_references(
    shop: Shop, live: httpx.Client
) -> None:
    html = live.get("/projects/shop").text

    assert CANARY not in html
    assert "secret STRIPE_KEY (value hidden)" in html
    assert "db.DATABASE_URL (value hidden)" in html
    assert "<code>info</code>" in html  # a literal variable is shown as written


def test_a_failing_push_shows_its_blocker_and_what_keeps_serving(
    shop: Shop, live: httpx.Client
) -> None:
    shop.push(shop_toml(api_image=API_BROKEN), "Broken image")
    shop.nebula.settle()

    text = _text(live.get("/projects/shop").text)

    assert "image-pull: Back-off pulling image" in text
    assert "r-1 keeps serving" in text
    assert "1 failed" in text


def test_an_invalid_file_shows_the_configuration_blocker(shop: Shop, live: httpx.Client) -> None:
    shop.push('[services.api]\nimage = "not valid"\n', "Oops")
    shop.nebula.reconcile()

    text = _text(live.get("/projects/shop").text)

    assert "Blocked: configuration" in text
    assert "is invalid" in text
    assert "Nothing was staged; environments keep serving." in text


def test_text_from_the_repository_is_escaped(shop: Shop, live: httpx.Client) -> None:
    shop.push(shop_toml(level="<script>alert(1)</script>"), "<img src=x onerror=alert(2)>")
    shop.nebula.settle()

    html = live.get("/projects/shop").text + live.get("/changesets/3").text

    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_the_deployment_page_has_its_timeline(shop: Shop, live: httpx.Client) -> None:
    first = shop.nebula.deployments()[0]

    page = live.get(f"/deployments/{first['id']}")

    text = _text(page.text)
    assert page.status_code == 200
    for state in WITHOUT_RELEASE:
        assert f"{state} " in text
    assert re.search(r"\d+ (s|min) ago \(2026-01-05 12:00:\d\d UTC\)", text)


def test_a_deployment_in_flight_is_drawn_on_its_path_and_the_page_refreshes(
    shop: Shop, live: httpx.Client
) -> None:
    shop.nebula.ok("redeploy shop api --env staging --as bob")
    shop.nebula.reconcile()  # pending -> admitted

    html = live.get("/projects/shop").text

    assert 'data-refresh="2"' in html
    current = re.findall(r'<li class="step current" aria-current="step">([a-z-]+)<', html)
    assert current and current[0] in ("admitted", "starting")
    assert '<li class="step done">pending' in html


def test_nothing_on_the_page_changes_state(shop: Shop, live: httpx.Client) -> None:
    html = "".join(
        live.get(p).text for p in ("/", "/projects/shop", "/deployments/1", "/changesets/1")
    )

    assert "<form" not in html
    assert 'method="post"' not in html.lower()
    assert live.post("/projects/shop").status_code == 405


@pytest.mark.parametrize("path", ["/", "/projects/shop", "/deployments/1", "/changesets/1"])
def test_pages_are_served_with_a_strict_content_security_policy(
    shop: Shop, live: httpx.Client, path: str
) -> None:
    page = live.get(path)

    for name, value in SECURITY_HEADERS.items():
        assert page.headers[name] == value
    assert "<script>" not in page.text and " style=" not in page.text  # nothing inline


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/projects/nope", "No project named &#39;nope&#39;"),
        ("/deployments/12345", "No deployment 12345"),
        ("/changesets/x", "No change set &#39;x&#39;"),
        ("/nowhere", "Nothing at /nowhere"),
    ],
)
def test_a_missing_page_is_an_html_404(live: httpx.Client, path: str, message: str) -> None:
    page = live.get(path, headers={"Accept": "text/html"})

    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert message in page.text


def test_static_files_are_served(live: httpx.Client) -> None:
    assert live.get("/static/nebula.css").status_code == 200
    assert "data-refresh" in live.get("/static/nebula.js").text


def test_an_unreachable_repository_shows_the_delivery_blocker(
    nebula: Nebula, live: httpx.Client, tmp_path: Path
) -> None:
    nebula.ok(f"project add lost --repo {tmp_path / 'no-such-repo'} --no-check")
    nebula.reconcile()

    overview, page = _text(live.get("/").text), _text(live.get("/projects/lost").text)

    assert "Blocked (delivery):" in overview
    assert "Blocked: delivery" in page
    assert "no repository at that path. The next poll tries again." in page
