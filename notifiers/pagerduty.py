"""PagerDuty Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/trigger-events/):
the event a notice sends, built from its facts. Pure.

A failure triggers an ``error`` alert whose ``dedup_key`` is ``nebula/<project>/<environment>/<service>``,
so a second failure of the service joins the open alert, and the service's next healthy
deployment resolves it. Other events, when the channel lists them, trigger ``info`` alerts
that their own end resolves: a decided approval, a drift that cleared, a recovered project.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from notifiers.facts import (
    ApprovalRequest,
    DriftCleared,
    Drifted,
    Facts,
    Failure,
    Healthy,
    ProjectState,
    Test,
)
from reconciler.clock import utc

PATH = "/v2/enqueue"
SUMMARY = 1024  # PagerDuty's limit
TRIGGER, RESOLVE = "trigger", "resolve"


def alert_key(project: str, environment: str, service: str) -> str:
    return f"nebula/{project}/{environment}/{service}"


def dedup_key(facts: Facts) -> str:
    if isinstance(facts, Failure | Healthy):
        return alert_key(facts.project, facts.environment, facts.service)
    if isinstance(facts, ApprovalRequest):
        return f"nebula/{facts.project}/{facts.environment}/approval-{facts.approval_id}"
    if isinstance(facts, Drifted | DriftCleared):
        return f"nebula/{facts.project}/{facts.environment}/{facts.service}/drift"
    if isinstance(facts, ProjectState):
        return f"nebula/{facts.project}/blocked"
    return f"nebula/test/{facts.channel}"


def action(facts: Facts) -> str:
    """The end of what a trigger began is a resolve."""
    ended = (
        isinstance(facts, Healthy | DriftCleared)
        or (isinstance(facts, ApprovalRequest) and facts.decision is not None)
        or (isinstance(facts, ProjectState) and facts.recovered)
    )
    return RESOLVE if ended else TRIGGER


def event(facts: Facts, routing_key: str, at: datetime, public_url: str) -> dict[str, Any]:
    key = dedup_key(facts)
    if action(facts) == RESOLVE:
        return {"routing_key": routing_key, "event_action": RESOLVE, "dedup_key": key}
    summary, source, component, group, kind, details, label = _describe(facts)
    return {
        "routing_key": routing_key,
        "event_action": TRIGGER,
        "dedup_key": key,
        "payload": {
            "summary": summary if len(summary) <= SUMMARY else summary[: SUMMARY - 1] + "…",
            "source": source,
            "severity": "error" if isinstance(facts, Failure) else "info",
            "timestamp": utc(at).isoformat(),
            "component": component,
            "group": group,
            "class": kind,
            "custom_details": details,
        },
        "links": [{"href": _url(facts), "text": label}],
        "client": "Nebula",
        "client_url": public_url,
    }


def _url(facts: Facts) -> str:
    return facts.page or facts.url if isinstance(facts, ApprovalRequest) else facts.url


Described = tuple[str, str, str, str, str, dict[str, Any], str]


def _describe(facts: Facts) -> Described:
    """summary, source, component, group, class, custom_details, link text."""
    if isinstance(facts, Failure):
        where = f"{facts.project}/{facts.environment}"
        keeps = f"{facts.keeps_serving} keeps serving" if facts.keeps_serving else "nothing serves"
        summary = (
            f"{where}: {facts.service} {facts.release} failed ({facts.blocker or 'no blocker'}): "
            f"{facts.message or 'the deployment failed'} ({keeps})"
        )
        details = {**facts.to_payload(), "url": facts.url}
        return (
            summary, f"{facts.project}-{facts.environment}", facts.service, where,
            facts.blocker or "failed", details, f"Deployment #{facts.deployment_id} on Nebula",
        )  # fmt: skip
    if isinstance(facts, ApprovalRequest):
        where = f"{facts.project}/{facts.environment}"
        services = ", ".join(f"{s.service} {s.release}" for s in facts.services) or facts.kind
        summary = f"{where}: approval needed for {services} (requested by {facts.requested_by})"
        details = {"approval_id": facts.approval_id, "kind": facts.kind, "services": services}
        return (
            summary, f"{facts.project}-{facts.environment}", "approval", where, "approval",
            details, f"Approval {facts.approval_id} on Nebula",
        )  # fmt: skip
    if isinstance(facts, Drifted):
        where = f"{facts.project}/{facts.environment}"
        summary = (
            f"{where}: {facts.service} drifted from {facts.release} ({facts.count} differences)"
        )
        details = {"differences": list(facts.differences), "healed": facts.healed}
        return (
            summary, f"{facts.project}-{facts.environment}", facts.service, where, "drift",
            details, "The environment on Nebula",
        )  # fmt: skip
    if isinstance(facts, ProjectState):
        summary = f"{facts.project} is blocked ({facts.blocker}): {facts.message}"
        details = {"blocker": facts.blocker, "message": facts.message, "commit": facts.commit}
        return (
            summary, facts.project, "project", facts.project, facts.blocker, details,
            "The project on Nebula",
        )  # fmt: skip
    assert isinstance(facts, Test)
    summary = f"Nebula test notification for channel {facts.channel}, sent by {facts.by}"
    return summary, "nebula", "nebula", "nebula", "test", {"by": facts.by}, "Nebula"
