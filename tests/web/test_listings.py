"""The 1.1 pages and API: ``/approvals``, ``/deployments`` (filters), the grid of what runs
where, the rendered-manifest diff beside the field lines, ``GET /api/v1/audit`` and the
history API."""

from __future__ import annotations

import re

import httpx

from tests.web.conftest import Shop
from tests.web.world import shop_toml

NEW_API = "registry.example.com/shop/api@sha256:" + "b" * 64


def _text(html: str) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    return text.replace("&lt;", "<").replace("&gt;", ">")


def test_the_approvals_page_lists_pending_then_decided(shop: Shop, live: httpx.Client) -> None:
    page = live.get("/approvals")
    assert page.status_code == 200
    text = _text(page.text)
    assert "Pending (1)" in text
    assert "Approval 1: shop / production, changeset" in text
    assert "Requested by shop (push by Ada Lovelace <ada@example.com>)" in text
    assert text.index("Pending (1)") < text.index("Decided") and "None decided yet." in text
    shop.nebula.ok("reject 1 --as alice --reason 'not before the sale'")
    text = _text(live.get("/approvals").text)
    assert "Pending (0)" in text and "Nothing waits for a decision." in text
    assert re.search(
        r"1 shop / production change set 2 rejected .* alice not before the sale", text
    )


def test_the_deployments_page_is_newest_first_and_filters(shop: Shop, live: httpx.Client) -> None:
    page = live.get("/deployments")
    assert page.status_code == 200
    ids = re.findall(r'<td><a href="/deployments/(\d+)">', page.text)
    assert ids == ["4", "3", "2", "1"]  # db and api, in staging and production
    production = live.get("/deployments", params={"environment": "production"}).text
    assert re.findall(r'<td><a href="/deployments/(\d+)">', production) == ["4", "3"]
    waiting = live.get("/deployments", params={"state": "awaiting-approval", "project": "shop"})
    assert re.findall(r'<td><a href="/deployments/(\d+)">', waiting.text) == ["4", "3"]
    assert (
        '<a class="chip chosen" href="/deployments?project=shop&amp;state=awaiting-approval"'
        in waiting.text
    )
    none = live.get("/deployments", params={"state": "failed"}).text
    assert "No deployment matches these filters." in _text(none)
    assert live.get("/deployments", params={"state": "exploded"}).status_code == 404
    assert live.get("/deployments", params={"project": "nowhere"}).status_code == 404


def test_the_grid_shows_what_runs_where(shop: Shop, live: httpx.Client) -> None:
    for path in ("/", "/projects/shop"):
        html = live.get(path).text
        assert 'id="grid-shop"' in html
        start = html.index('id="grid-shop">') + len('id="grid-shop">')
        grid = html[start : html.index("</table>", start)]
        head = _text(grid[: grid.index("</thead>")])
        assert head.split() == ["Service", "staging", "production", "protected"]
        cell = re.search(r'data-env="staging" data-service="api">(.*?)</td>', grid, re.S)
        assert cell is not None
        text = _text(cell.group(1))
        # drift detection checked it once it went healthy (production's waits: nothing to check)
        assert "r-1" in text and "sync: synced" in text
        waiting = re.search(r'data-env="production" data-service="api">(.*?)</td>', grid, re.S)
        assert waiting is not None and "sync: unknown" in _text(waiting.group(1))
        assert "registry.example.com/shop/api@sha256:aaaaaaaaaaaa…" in text  # a short image
        production = re.search(r'data-env="production" data-service="api">(.*?)</td>', grid, re.S)
        assert production is not None
        assert "awaiting-approval" in production.group(1) and "approval 1" in production.group(1)


def test_change_set_and_approval_views_show_the_manifest_diff(
    shop: Shop, live: httpx.Client
) -> None:
    shop.nebula.ok("approve 1 --as alice")
    shop.nebula.settle()
    shop.push(shop_toml(api_image=NEW_API), "New api image")
    shop.nebula.settle()
    (pending,) = [a for a in shop.nebula.approvals() if a["state"] == "pending"]
    changeset = live.get(f"/changesets/{pending['target_id']}").text
    text = _text(changeset)
    assert "Rendered manifests" in text
    assert "Deployment/api-r2 created" in text and "Deployment/api-r1 deleted" in text
    assert re.search(r"Service/api configured", text)
    assert '<span class="add">+    nebula.dev/release: r-2</span>' in changeset
    # The image line's digests are short in the cell, whole in its title.
    assert f'title="{NEW_API}"' in changeset
    assert "api@sha256:bbbbbbbbbbbb…" in changeset
    approvals_page = live.get("/approvals").text
    assert f'id="approval-{pending["id"]}"' in approvals_page
    assert "Deployment/api-r2" in approvals_page and "Lines of change set" in approvals_page


def test_the_audit_and_history_apis(shop: Shop, live: httpx.Client) -> None:
    shop.nebula.ok("policy set forbid_self_approval false --as olga")
    assert live.get("/api/v1/audit").status_code == 401, "the audit needs a token"
    live.headers.update(shop.tokens.header("bob"))  # any member's
    events = live.get("/api/v1/audit").json()["events"]
    assert events[-1] == {
        "at": events[-1]["at"],
        "actor": "olga",
        "action": "policy.set",
        "target": "policy forbid_self_approval",
        "message": "forbid_self_approval: true -> false",
    }
    assert live.get("/api/v1/audit", params={"since": "1s"}).json()["events"][-1:] == events[-1:]
    assert live.get("/api/v1/audit", params={"since": "yesterday"}).status_code == 422
    history = live.get("/api/v1/projects/shop/services/api/history", params={"env": "staging"})
    assert history.status_code == 200
    assert [(r["release"], r["state"]) for r in history.json()["releases"]] == [("r-1", "active")]
    missing = live.get("/api/v1/projects/shop/services/nope/history", params={"env": "staging"})
    assert missing.status_code == 404
