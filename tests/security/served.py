"""The ``nebula serve`` phase of the canary flow: the real server as a process on the flow's
store, with the same secrets in its environment. It polls, deploys, posts to Slack and
serves while every page and API document is fetched; its log is recorded as the operator
would read it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx

from tests.security.crawling import crawl_api, crawl_pages, shown
from tests.security.installation import API_NEXT, Installation, Recorded, blog_toml, shop_toml
from tests.web.world import ServeProcess


@contextlib.contextmanager
def nebula_serve(inst: Installation) -> Iterator[ServeProcess]:
    """``nebula serve --log-level debug`` on the flow's store, stopped with SIGTERM (and
    killed if it takes more than 15 s: its log, recorded by the caller, says why)."""
    served = ServeProcess(inst.serve_env(), inst.tmp / "serve.log")
    served.start("--log-level", "debug")
    try:
        yield served
    finally:
        with contextlib.suppress(AssertionError):
            served.stop(timeout=15)


def serve_phase(inst: Installation, record: Recorded) -> None:
    """A new push, polled and deployed by ``nebula serve``; an approval decided through its
    API; every page and document fetched while it works."""
    inst.shop.commit({"nebula.toml": shop_toml(API_NEXT, "error")}, "Served push")
    inst.blog.commit({"nebula.toml": blog_toml("debug")}, "Served blog push")
    outputs = inst.outputs
    with nebula_serve(inst) as served, httpx.Client(base_url=served.url, timeout=10) as http:

        def get(method: str, path: str, **kwargs: Any) -> httpx.Response:
            response = http.request(method, path, **kwargs)
            outputs.add("serve-http", f"{method} {path} -> {response.status_code}", shown(response))
            return response

        def status(slug: str) -> dict[str, Any]:
            found: dict[str, Any] = get("GET", f"/api/v1/projects/{slug}").json()["project"]
            return found

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            commit = inst.shop.head()
            if status("shop")["commit"] == commit and status("ghost")["blocker"]:
                break
            time.sleep(0.2)
        record.serve_polled = status("shop")["commit"] == inst.shop.head()
        pending = [
            a
            for a in get("GET", "/api/v1/approvals?state=pending").json()["approvals"]
            if a["project"] == "shop"
        ]
        token = inst.canaries.learnt["alice_token"]
        for a in pending:
            get(
                "POST",
                f"/api/v1/approvals/{a['id']}/approve",
                headers={"Authorization": f"Bearer {token}"},
            )
        get("POST", "/api/v1/approvals/1/approve", headers={"Authorization": f"Bearer {token}x"})
        get("POST", "/api/v1/deployments/1/cancel", headers={"Authorization": "Basic Zm9vOmJhcg=="})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            moving = [
                d
                for d in get("GET", "/api/v1/deployments?project=shop").json()["deployments"]
                if d["state"] not in ("healthy", "failed", "cancelled", "superseded", "rejected")
                and d["state"] != "awaiting-approval"
            ]
            if not moving:
                break
            time.sleep(0.2)
        time.sleep(2.5)  # one outbox round (every 2 s) for what the approval changed
        record.pages += crawl_pages(get)
        record.api_documents += crawl_api(get)
        get("GET", "/metrics")
    outputs.add("serve-log", "nebula serve --log-level debug (stdout and stderr)", served.logs())
