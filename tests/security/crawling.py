"""Fetching everything the app serves: every page reachable from ``/`` and every JSON API
document, by id. Shared by both phases of the canary flow (``flow.py`` against the app on
loopback, ``served.py`` against ``nebula serve``) and by the route tests, each passing its
own recording ``get``."""

from __future__ import annotations

import re
from typing import Any

import httpx


def shown(response: httpx.Response) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    return f"{headers}\n\n{response.text}"


def crawl_pages(get: Any) -> int:
    """Follow every same-site link from ``/``; returns how many pages were fetched."""
    seen: set[str] = set()
    queue = ["/"]
    while queue and len(seen) < 400:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        response = get("GET", path)
        if "html" not in response.headers.get("content-type", ""):
            continue
        for link in re.findall(r'(?:href|src)="(/[^"#]*)"', response.text):
            if link not in seen and not link.startswith("/api/docs"):
                queue.append(link)
    return len(seen)


def crawl_api(get: Any) -> int:
    """Every listing of the JSON API and every object in it, by id."""
    count = 0

    def fetch(path: str) -> Any:
        nonlocal count
        count += 1
        response = get("GET", path)
        return response.json() if response.status_code == 200 else {}

    fetch("/openapi.json")
    for p in fetch("/api/v1/projects").get("projects", []):
        fetch(f"/api/v1/projects/{p['slug']}")
        fetch(f"/api/v1/projects/{p['slug']}/status")
        fetch(f"/api/v1/status?project={p['slug']}")
        fetch(f"/api/v1/deployments?project={p['slug']}")
    fetch("/api/v1/status")
    for d in fetch("/api/v1/deployments?limit=5000").get("deployments", []):
        fetch(f"/api/v1/deployments/{d['id']}")
    for cs in fetch("/api/v1/changesets").get("changesets", []):
        fetch(f"/api/v1/changesets/{cs['id']}")
    for a in fetch("/api/v1/approvals").get("approvals", []):
        fetch(f"/api/v1/approvals/{a['id']}")
    return count
