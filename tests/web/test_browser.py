"""The status page in headless Chromium, served by ``nebula serve``: it follows a deployment
live, shows the approval waiting and a failing push's blocker, holds no secret, logs no
console error, and fits a 375 px phone as well as a desktop (screenshots in test-artifacts/)."""

from __future__ import annotations

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
