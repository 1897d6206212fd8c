"""The status page in headless Chromium, served by ``nebula serve``: it follows a deployment
live, shows the approval waiting and a failing push's blocker, holds no secret, logs no
console error, and fits a 375 px phone as well as a desktop (screenshots in test-artifacts/)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.git import GitRepoFactory
from tests.web import world

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 30_000

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path, git_repos: GitRepoFactory) -> Iterator[tuple[world.ServeProcess, Any]]:
    repo = git_repos.local("shop")
    # Stages take a second each, so a page can watch a deployment in flight.
    process, _ = world.prepare_serve(tmp_path, repo, interval=1, simulated_delay="1s")
    process.start()
    yield process, repo
    process.kill()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.errors = []  # console errors and uncaught exceptions, as the test sees them
    opened.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: opened.errors.append(str(e)))
    yield opened
    context.close()


def _staging_api(process: world.ServeProcess) -> dict[str, Any]:
    status = world.api(process.url, f"/api/v1/status?project={world.SLUG}")["projects"][0]
    [unit] = [
        u
        for e in status["environments"]
        if e["name"] == "staging"
        for u in e["services"]
        if u["name"] == "api"
    ]
    return unit  # type: ignore[no-any-return]


def _staging_card(page: Any, process: world.ServeProcess) -> Any:
    """The project page opened, and its card of staging's api."""
    page.goto(f"{process.url}/projects/{world.SLUG}")
    return page.locator("#service-staging-api")


def _screenshots(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for width, height in ((1280, 900), (375, 812)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, f"{name} is {overflow} px wide at a {width} px viewport"
    page.set_viewport_size({"width": 1280, "height": 900})


def test_the_project_page_follows_a_deployment_to_healthy(
    server: tuple[world.ServeProcess, Any], page: Any
) -> None:
    from playwright.sync_api import expect

    process, _ = server
    card = _staging_card(page, process)

    # In flight: the current stage is drawn on the path, and the page says it updates itself.
    expect(card.locator(".step.current")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#live-status")).to_contain_text("updates every 2 s")
    _screenshots(page, "project-in-flight")

    # Then healthy, without a reload: the page refreshed itself.
    expect(card.locator("h3 .badge")).to_have_text("healthy", timeout=WAIT_MS)
    expect(card.locator(".step.current")).to_have_count(0)

    # Production waits for an approval, with the change set's lines.
    approval = page.locator("article.approval")
    expect(approval.locator("h3")).to_have_text(
        "Approval 1: production, changeset", timeout=WAIT_MS
    )
    expect(approval.locator("table.lines")).to_contain_text("first_deploy")
    expect(page.locator("#service-production-api h3 .badge")).to_have_text("awaiting approval")

    # Variables from a secret or a database are masked references; the value is nowhere.
    page.locator("#vars-staging-api summary").click()
    expect(page.locator("#vars-staging-api")).to_contain_text("secret STRIPE_KEY")
    assert world.CANARY not in page.content()
    _screenshots(page, "project-awaiting-approval")

    page.locator("#service-staging-api a[href^='/deployments/']").click()
    expect(page.locator("h1")).to_contain_text("healthy")
    expect(page.locator(".timeline li").last).to_contain_text("healthy")
    _screenshots(page, "deployment")

    assert page.errors == []


def test_a_failing_push_shows_its_blocker_message(
    server: tuple[world.ServeProcess, Any], page: Any
) -> None:
    from playwright.sync_api import expect

    process, repo = server
    card = _staging_card(page, process)
    expect(card.locator("h3 .badge")).to_have_text("healthy", timeout=WAIT_MS)

    repo.commit({"nebula.toml": world.shop_toml(api_image=world.API_BROKEN)}, "Broken image")
    world.eventually(
        lambda: _staging_api(process)["deployment"], what="the push's deployment started"
    )
    page.reload()

    expect(card.locator("h3 .badge")).to_have_text("failed", timeout=WAIT_MS)
    message = card.locator(".deployment .message")
    expect(message).to_contain_text("image-pull:")
    expect(message).to_contain_text("r-1 keeps serving")
    expect(card.locator(".step.stopped")).to_have_text("starting (stopped here)")
    assert world.CANARY not in page.content()
    _screenshots(page, "project-failed")

    page.goto(f"{process.url}/")
    expect(page.locator(f"#project-{world.SLUG}")).to_contain_text("1 failed")
    _screenshots(page, "overview")
    assert page.errors == []


# -- the 1.1 pages, served in-process from a settled shop (fake clock) ----------------------


def _at_phone_and_desktop(page: Any, name: str) -> None:
    """Screenshots at 1400 px and 400 px; at each, nothing wider than the viewport, no field
    or service name broken across lines, and no image cell taller than one line."""
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1400, 400):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, f"{name} is {overflow} px wide at a {width} px viewport"
        broken = page.evaluate(
            """() => [
                ...[...document.querySelectorAll(
                    'td.field code, details.diff summary code, .grid code.image')]
                    .filter(e => e.getClientRects().length > 1),
                ...[...document.querySelectorAll('td.name, th.name')]
                    .filter(e => getComputedStyle(e).whiteSpace !== 'nowrap'),
            ].map(e => e.textContent)"""
        )
        assert broken == [], f"{name} at {width} px breaks {broken}"


def test_the_grid_approvals_and_deployments_pages_in_chromium(
    shop: Any, live: Any, page: Any
) -> None:
    from playwright.sync_api import expect

    base = str(live.base_url).rstrip("/")
    # Debug logging, and staging's api public through a gateway (a route, a URL on the page).
    routed = (
        world.shop_toml(level="debug").replace(
            "[environments.staging]\n", '[environments.staging]\ngateway = "infra/public"\n'
        )
        + '\n[services.api.environments.staging.processes.web]\ndomains = ["shop.example.com"]\n'
    )
    shop.push(routed, "Debug logging, a public domain in staging")
    shop.nebula.settle()

    page.goto(f"{base}/projects/{world.SLUG}")
    grid = page.locator(f"#grid-{world.SLUG}")
    staging_api = grid.locator("td[data-env='staging'][data-service='api']")
    expect(staging_api).to_contain_text("r-2")
    expect(staging_api).to_contain_text("sync: synced")  # checked once r-2 went healthy
    image = staging_api.locator("code.image")
    assert image.get_attribute("title") == world.API  # the whole reference on hover
    url = staging_api.locator("a.url")
    expect(url).to_have_text("https://shop.example.com")
    assert url.get_attribute("href") == "https://shop.example.com"
    assert (
        image.inner_text()
        == world.API.split("@")[0] + "@sha256:" + world.API.split(":")[-1][:12] + "…"
    )
    expect(grid.locator("td[data-env='production'][data-service='api']")).to_contain_text(
        "awaiting-approval"
    )
    _at_phone_and_desktop(page, "project-grid")

    page.goto(f"{base}/approvals")
    expect(page.locator("#pending-title")).to_have_text("Pending (1)")
    card = page.locator("article.approval").first
    expect(card.locator("table.lines")).to_contain_text("first_deploy")
    expect(card.locator(".manifests")).to_contain_text("created")
    _at_phone_and_desktop(page, "approvals")

    page.goto(f"{base}/changesets/3")
    expect(page.locator("table.lines")).to_contain_text("variables.LOG_LEVEL")
    expect(page.locator(".manifests")).to_contain_text("configured")
    expect(page.locator("details.diff[open] pre.diff .add").first).to_be_visible()
    _at_phone_and_desktop(page, "changeset-diff")

    page.goto(f"{base}/deployments?environment=staging")
    rows = page.locator("#deployments tbody tr")
    expect(rows.first).to_contain_text("staging")
    assert all("staging" in rows.nth(i).inner_text() for i in range(rows.count()))
    page.locator("nav.filters a.chip", has_text="healthy").first.click()
    expect(page).to_have_url(re.compile(r"environment=staging&state=healthy"))
    expect(page.locator("nav.filters a.chosen")).to_have_text(["all", "staging", "healthy"])
    _at_phone_and_desktop(page, "deployments")

    page.goto(f"{base}/")
    expect(page.locator(f"#grid-{world.SLUG}")).to_be_visible()
    _at_phone_and_desktop(page, "overview-grid")
    assert page.errors == []
