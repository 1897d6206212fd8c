"""The status page's layout in headless Chromium (issue 29): the front page's grid uses the
page's width, so every environment shows at 1280 and 1920 px; on a 390 px phone the
deployments listing keeps each row's state on screen and stays short; and axe-core finds no
serious or critical accessibility violation on the pages people use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web import world

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[1] / "node" / "node_modules" / "axe-core" / "axe.min.js"
PAGES = ("/", f"/projects/{world.SLUG}", "/deployments", "/approvals")


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def _right_edge(locator: Any) -> float:
    box = locator.bounding_box()
    assert box is not None, "not laid out"
    return float(box["x"] + box["width"])


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_environment_of_the_grid_shows_at_a_desktops_width(
    shop: Any, live: Any, page: Any, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(str(live.base_url).rstrip("/") + "/")
    # Shown means inside the grid's scrolling region as laid out, not scrolled to.
    region = page.locator(f"div.scroll:has(#grid-{world.SLUG})")
    shown = min(width, _right_edge(region))
    headers = page.locator(f"#grid-{world.SLUG} thead th")
    assert headers.all_inner_texts()[1:] == ["staging", "production protected"]
    for index in range(headers.count()):
        assert _right_edge(headers.nth(index)) <= shown
    cells = page.locator(f"#grid-{world.SLUG} td")
    assert cells.count() >= 2
    for index in range(cells.count()):
        assert _right_edge(cells.nth(index)) <= shown, cells.nth(index).inner_text()


def test_a_phone_keeps_each_deployments_state_on_screen(shop: Any, live: Any, page: Any) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(str(live.base_url).rstrip("/") + "/deployments")
    states = page.locator("#deployments tbody td.state")
    rows = states.count()
    assert rows >= 4
    for index in range(rows):
        assert states.nth(index).is_visible()
        assert _right_edge(states.nth(index)) <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # A row is a line or two, not a column of wrapped messages.
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 600 + rows * 90, f"{height} px for {rows} deployments"


@pytest.mark.skipif(not AXE.exists(), reason=f"{AXE} is missing: run npm ci --prefix tests/node")
def test_no_serious_accessibility_violation(shop: Any, live: Any, browser: Any) -> None:
    # The page's Content-Security-Policy allows its own scripts only: the test's axe-core is
    # let in by the browser context, not by weakening the policy.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    found = {}
    for path in PAGES:
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(str(live.base_url).rstrip("/") + path)
            page.add_script_tag(path=str(AXE))
            violations = page.evaluate(
                """async () => (await axe.run(document)).violations
                    .filter(v => v.impact === "serious" || v.impact === "critical")
                    .map(v => v.id + ": " + v.nodes.map(n => n.target.join(" ")).join(", "))"""
            )
            if violations:
                found[f"{path} at {width} px"] = violations
    context.close()
    assert found == {}
