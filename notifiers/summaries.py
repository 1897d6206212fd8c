"""A notice as a title, a paragraph, labelled facts, a few preformatted lines and a link: what
a Teams card and an e-mail both show, so the two say the same in their own formats.

Pure, and plain text: each renderer escapes for its own format (``cards``, ``mails``).
"""

from __future__ import annotations

from dataclasses import dataclass

from notifiers.facts import (
    ApprovalRequest,
    DriftCleared,
    Drifted,
    Facts,
    Failure,
    Healthy,
    Line,
    ProjectState,
    when,
)
from reconciler.core.states import LineKind

SHOWN_LINES = 12
_DECIDED = {
    "approved": "Approved",
    "rejected": "Rejected",
    "expired": "Expired",
    "cancelled": "Cancelled",
}


@dataclass(frozen=True)
class Summary:
    title: str
    text: str
    facts: tuple[tuple[str, str], ...]
    link: str
    link_label: str
    lines: tuple[str, ...] = ()
    project: str | None = None  # for filters: e-mail's List-Id


def of(facts: Facts) -> Summary:
    if isinstance(facts, ApprovalRequest):
        return _approval(facts)
    if isinstance(facts, Failure):
        return _failure(facts)
    if isinstance(facts, Healthy):
        where = f"{facts.project}/{facts.environment}"
        return Summary(
            title=f"Healthy: {facts.service} {facts.release} in {where}",
            text=f"{facts.release} serves now"
            + (f" (was {facts.previous})." if facts.previous else "."),
            facts=(("Kind", facts.kind), ("Deployment", f"#{facts.deployment_id}")),
            link=facts.url,
            link_label="Open the deployment",
            project=facts.project,
        )
    if isinstance(facts, ProjectState):
        title = (
            f"{facts.project} recovered from its {facts.blocker} blocker"
            if facts.recovered
            else f"{facts.project} is blocked: {facts.blocker}"
        )
        shown = (("Commit", facts.commit[:7]),) if facts.commit else ()
        return Summary(
            title, facts.message, (("Blocker", facts.blocker), *shown), facts.url,
            "Open the project", project=facts.project,
        )  # fmt: skip
    if isinstance(facts, Drifted):
        return _drifted(facts)
    if isinstance(facts, DriftCleared):
        where = f"{facts.project}/{facts.environment}"
        return Summary(
            title=f"Drift cleared: {facts.service} in {where}",
            text=f"What runs agrees with release {facts.release} again.",
            facts=(("Release", facts.release),),
            link=facts.url,
            link_label="Open the environment",
            project=facts.project,
        )
    return Summary(
        title="Nebula test notification",
        text=f"Channel {facts.channel} works: {facts.by} sent this with nebula notify test.",
        facts=(),
        link=facts.url,
        link_label="Open Nebula",
    )


def _approval(r: ApprovalRequest) -> Summary:
    where = f"{r.project}/{r.environment}"
    who = f"commit {r.commit.short}" if r.by_project and r.commit is not None else r.requested_by
    facts = [
        ("Requested by", who),
        ("Kind", r.kind),
        ("Services", ", ".join(f"{s.service} {s.release}" for s in r.services) or "-"),
    ]
    if r.decision is None:
        title = f"Approval needed: {where}"
        facts.append(("Expires", when(r.expires_at)))
        text = "An approval is waiting for someone who may decide it."
        label = "Review and decide"
    else:
        title = f"{_DECIDED.get(r.decision.state, r.decision.state.title())}: {where}"
        by = f" by {r.decision.by}" if r.decision.by else ""
        at = f" at {when(r.decision.at)}" if r.decision.at else ""
        text = f"{_DECIDED.get(r.decision.state, r.decision.state)}{by}{at}."
        if r.decision.reason:
            text += f" {r.decision.reason}"
        label = "Open the approval"
    if r.commit is not None:
        facts.append(("Commit", f"{r.commit.short} {r.commit.message or ''}".strip()))
    lines = [*r.evidence] + [_line(line) for line in r.lines[:SHOWN_LINES]]
    if len(r.lines) > SHOWN_LINES:
        lines.append(f"... and {len(r.lines) - SHOWN_LINES} more lines")
    return Summary(title, text, tuple(facts), r.page or r.url, label, tuple(lines), r.project)


def _line(line: Line) -> str:
    """``+`` added, ``-`` removed, ``~`` changed, as ``nebula changeset show`` marks them."""
    name = f"{line.service} {line.field}"
    if line.kind == LineKind.SECRET:
        return f"~ {name} changed"
    if line.before is None:
        return f"+ {name} = {line.after}"
    if line.after is None:
        return f"- {name} (was {line.before})"
    return f"~ {name}: {line.before} -> {line.after}"


def _failure(f: Failure) -> Summary:
    where = f"{f.project}/{f.environment}"
    keeps = f.keeps_serving or "nothing (no release was serving)"
    return Summary(
        title=f"Deployment failed: {f.service} {f.release} in {where}",
        text=f.message or "The deployment failed.",
        facts=(
            ("Blocker", f.blocker or "none"),
            ("Keeps serving", keeps),
            ("Kind", f.kind),
            ("Deployment", f"#{f.deployment_id}"),
        ),
        link=f.url,
        link_label="Open the deployment",
        project=f.project,
    )


def _drifted(d: Drifted) -> Summary:
    where = f"{d.project}/{d.environment}"
    lines = list(d.differences)
    if d.count > len(lines):
        lines.append(f"... and {d.count - len(lines)} more differences")
    outcome = (
        f"Self-heal put it back: {d.healed}"
        if d.healed
        else f"Nebula has not changed it. See nebula diff {d.project} --env {d.environment}."
    )
    return Summary(
        title=f"Drift: {d.service} {d.release} in {where}",
        text=f"What runs differs from release {d.release}. {outcome}",
        facts=(("Differences", str(d.count)),),
        link=d.url,
        link_label="Open the environment",
        lines=tuple(lines),
        project=d.project,
    )
