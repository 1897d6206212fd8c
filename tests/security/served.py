"""The ``nebula serve`` phase of the canary flow: the real server as a process on the flow's
store, with the same secrets in its environment. It polls, deploys, posts to Slack and
serves while every page and API document is fetched; its log is recorded as the operator
would read it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.plugins.git import free_port
from tests.security.crawling import crawl_api, crawl_pages, shown
from tests.security.installation import API_NEXT, Installation, Recorded, blog_toml, shop_toml


def nebula_command() -> list[str]:
    found = shutil.which("nebula") or str(Path(sys.executable).with_name("nebula"))
    if Path(found).exists():
        return [found]
    return [sys.executable, "-c", "from reconciler.cli.main import main; raise SystemExit(main())"]


class Served:
    """``nebula serve --log-level debug`` on the flow's store, stopped with SIGTERM."""

    def __init__(self, inst: Installation) -> None:
        self.inst = inst
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = inst.tmp / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Served:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*nebula_command(), "serve", "--port", str(self.port), "--log-level", "debug"],
                env=self.inst.serve_env(),
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nebula serve exited {self.process.returncode}:\n{self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"nebula serve did not answer within 60 s:\n{self.logs()}")

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def serve_phase(inst: Installation, record: Recorded) -> None:
    """A new push, polled and deployed by ``nebula serve``; an approval decided through its
    API; every page and document fetched while it works."""
    inst.shop.commit({"nebula.toml": shop_toml(API_NEXT, "error")}, "Served push")
    inst.blog.commit({"nebula.toml": blog_toml("debug")}, "Served blog push")
    outputs = inst.outputs
    with Served(inst) as served, httpx.Client(base_url=served.url, timeout=10) as http:

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
