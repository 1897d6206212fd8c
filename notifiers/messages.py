"""The Slack messages Nebula sends, built from ``facts`` with the ``blocks`` builders.

Pure functions: no store, no clock, no network. Every dynamic text is escaped here, at the
one place it meets mrkdwn. Long change sets are folded (the first lines and a count), since
a reviewer reads the top of a diff in Slack and the rest on the status page.
"""

from __future__ import annotations

import json
import re
from typing import Any

from notifiers import blocks
from notifiers.blocks import Block, code, escape
from notifiers.facts import (
    ApprovalRequest,
    Decision,
    DriftCleared,
    Drifted,
    Failure,
    Healthy,
    Line,
    ManifestDiff,
    ProjectState,
    ServiceRelease,
    Test,
    when,
)
from notifiers.notifying import Message
from reconciler.core.states import ApprovalTarget, LineKind

APPROVE = "nebula_approve"
REJECT = "nebula_reject"
SHOWN_LINES = 12
SHOWN_OBJECTS = 6
VALUE_WIDTH = 60
_DIGEST = re.compile(r"@sha256:([0-9a-f]{12})[0-9a-f]{52}")

_VIA = {"slack": "in Slack", "cli": "with the CLI", "api": "through the API"}
_DECIDED = {
    "approved": ("Approved", ":white_check_mark:"),
    "rejected": ("Rejected", ":x:"),
    "expired": ("Expired", ":hourglass:"),
    "cancelled": ("Cancelled", ":no_entry_sign:"),
}


# -- approval requests ---------------------------------------------------------------------


def approval(request: ApprovalRequest) -> Message:
    """The request with Approve/Reject buttons, or, once decided, the outcome in their place."""
    where = f"{request.project}/{request.environment}"
    title = f"Approval needed: {where}"
    if request.decision is not None:
        title = (
            f"{_DECIDED.get(request.decision.state, (request.decision.state.title(),))[0]}: {where}"
        )
    out: list[Block] = [
        blocks.header(title),
        blocks.section(fields=_request_fields(request)),
    ]
    if request.commit is not None:
        out.append(blocks.context(_commit_line(request)))
    if request.message:
        out.append(blocks.section(f"*Message*\n{escape(request.message)}"))
    if request.services:
        out.append(
            blocks.section("*Services*\n" + "\n".join(_service(s) for s in request.services))
        )
    if request.evidence:
        out.append(blocks.section("\n".join(f":mag: {escape(e)}" for e in request.evidence)))
    if request.lines:
        out.append(blocks.section(_lines_text(request.lines)))
    out.append(blocks.section(manifest_summary(request.manifests)))
    out.append(
        blocks.context(
            blocks.link(request.url, "Open on the status page"),
            f"Expires {when(request.expires_at)}" if request.decision is None else "",
        )
    )
    if request.decision is None:
        value = str(request.approval_id)
        out.append(
            blocks.actions(
                f"nebula_approval_{request.approval_id}",
                blocks.button("Approve", APPROVE, value, "primary"),
                blocks.button("Reject", REJECT, value, "danger"),
            )
        )
    else:
        out.append(blocks.section(decision_line(request.decision), block_id="nebula_decision"))
    return Message(blocks.cut(_approval_text(request, title), blocks.MESSAGE_TEXT), tuple(out))


def decision_line(decision: Decision) -> str:
    label, emoji = _DECIDED.get(decision.state, (decision.state.title(), ":grey_question:"))
    text = f"{emoji} *{label}*"
    if decision.by and decision.state in ("approved", "rejected"):
        text += f" by *{escape(decision.by)}*"
    via = _VIA.get(decision.via or "")
    if via:
        text += f" {via}"
    if decision.at is not None:
        text += f" at {when(decision.at)}"
    if decision.reason:
        text += f": {escape(decision.reason)}"
    return text


def _request_fields(request: ApprovalRequest) -> list[str]:
    what = (
        f"change set {request.target_id}"
        if request.target == ApprovalTarget.CHANGESET
        else f"{request.kind} (deployment {request.target_id})"
    )
    asked = (
        f"*Pushed*\n{code(request.commit.short)}"
        if request.by_project and request.commit is not None
        else f"*Requested by*\n{escape(request.requested_by)}"
    )
    return [
        f"*Project*\n{escape(request.project)}",
        f"*Environment*\n{escape(request.environment)}",
        f"*Request*\n{escape(what)}",
        asked,
    ]


def _commit_line(request: ApprovalRequest) -> str:
    assert request.commit is not None
    commit = request.commit
    by = f" by {escape(commit.author)}" if commit.author else ""
    subject = (commit.message or "").strip().splitlines()
    return f"Commit {code(commit.short)}{by}" + (f": {escape(subject[0])}" if subject else "")


def _service(s: ServiceRelease) -> str:
    extra = "database, " if s.unit_kind == "database" else ""
    was = f"replaces {s.previous}" if s.previous else "first release"
    return f"• {code(f'{s.service} {s.release}')} {escape(s.kind)} ({extra}{escape(was)})"


def _lines_text(lines: tuple[Line, ...]) -> str:
    count = len(lines)
    shown = [diff_line(line) for line in lines[:SHOWN_LINES]]
    if count > SHOWN_LINES:
        shown.append(
            f"… and {count - SHOWN_LINES} more line{'s' if count - SHOWN_LINES != 1 else ''}"
        )
    heading = f"*Changes* ({count} line{'s' if count != 1 else ''})"
    return f"{heading}\n{blocks.preformatted(shown, blocks.SECTION_TEXT - len(heading) - 1)}"


def diff_line(line: Line) -> str:
    """``+`` added, ``-`` removed, ``~`` changed: the way a reviewer scans a diff."""
    name = line.field.removeprefix("variables.")
    if line.kind == LineKind.SECRET:
        return f"~ {line.service} {line.field} changed"
    if line.kind == "first-deploy":
        return f"+ {line.service}: first deploy, {value(line.after)}"
    if line.kind == "removal":
        return f"- {line.service}: removed (was {value(line.before)})"
    if line.kind == "variable-delete":
        return f"- {line.service} {name} (was {value(line.before)})"
    if line.before is None:
        return f"+ {line.service} {name} = {value(line.after)}"
    via = f" (via {line.via})" if line.via else ""
    return f"~ {line.service} {name}: {value(line.before)} → {value(line.after)}{via}"


def value(raw: Any) -> str:
    """A line's value on one short line: digests shortened, long values cut."""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    text = _DIGEST.sub(lambda m: f"@sha256:{m.group(1)}…", text).replace("\n", " ")
    return blocks.cut(text, VALUE_WIDTH)


def manifest_summary(diff: ManifestDiff) -> str:
    if diff.unavailable is not None:
        return f"*Manifests*: no summary ({escape(diff.unavailable)})"
    counts = [
        f"{len(diff.created)} created",
        f"{len(diff.configured)} configured",
        f"{len(diff.deleted)} deleted",
    ]
    if diff.unchanged:
        counts.append(f"{diff.unchanged} unchanged")
    text = "*Manifests*: " + ", ".join(counts)
    for label, refs in (
        ("Created", diff.created),
        ("Configured", diff.configured),
        ("Deleted", diff.deleted),
    ):
        if refs:
            names = ", ".join(code(r) for r in refs[:SHOWN_OBJECTS])
            more = f" and {len(refs) - SHOWN_OBJECTS} more" if len(refs) > SHOWN_OBJECTS else ""
            text += f"\n{label}: {names}{more}"
    return text


def _approval_text(request: ApprovalRequest, title: str) -> str:
    services = ", ".join(f"{s.service} {s.release}" for s in request.services)
    who = (
        f"commit {request.commit.short}"
        if request.by_project and request.commit is not None
        else request.requested_by
    )
    text = f"{title}: {services or request.kind} (requested by {who})"
    if request.message:
        text += f': "{request.message}"'
    for evidence in request.evidence:
        text += f". {evidence}"
    if request.decision is not None:
        text += f". {_plain_decision(request.decision)}"
    return text


def _plain_decision(decision: Decision) -> str:
    label = _DECIDED.get(decision.state, (decision.state.title(),))[0]
    by = f" by {decision.by}" if decision.by and decision.state in ("approved", "rejected") else ""
    return f"{label}{by}" + (f" at {when(decision.at)}" if decision.at else "")


# -- failures and project blockers ---------------------------------------------------------


def failure(f: Failure) -> Message:
    where = f"{f.project}/{f.environment}"
    keeps = f"{f.keeps_serving} keeps serving" if f.keeps_serving else "nothing was serving"
    fields = [
        f"*Blocker*\n{code(f.blocker or 'none')}",
        f"*Keeps serving*\n{escape(f.keeps_serving) if f.keeps_serving else 'nothing (no release was serving)'}",
        f"*Kind*\n{escape(f.kind)}",
        f"*Deployment*\n{blocks.link(f.url, f'#{f.deployment_id}')}",
    ]
    out = [
        blocks.header(f"Deployment failed: {f.service} {f.release} in {where}"),
        blocks.section(escape(f.message or "The deployment failed.")),
        blocks.section(fields=fields),
        blocks.context(blocks.link(f.url, "Open on the status page")),
    ]
    blocker = f" ({f.blocker})" if f.blocker else ""
    text = f"{where}: {f.service} {f.release} failed{blocker}. {keeps.capitalize()}."
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


def project_state(p: ProjectState) -> Message:
    commit = f"Commit {code(p.commit[:7])}" if p.commit else ""
    if p.recovered:
        title = f"{p.project} recovered from its {p.blocker} blocker"
        text = f"{p.project} recovered: {p.message}"
    else:
        title = f"{p.project} is blocked: {p.blocker}"
        text = f"{p.project} is blocked ({p.blocker}): {p.message}"
    out = [
        blocks.header(title),
        blocks.section(escape(p.message)),
        blocks.context(commit, blocks.link(p.url, "Open on the status page")),
    ]
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


# -- drift ------------------------------------------------------------------------------------


def drifted(d: Drifted) -> Message:
    where = f"{d.project}/{d.environment}"
    shown = [escape(line) for line in d.differences]
    if d.count > len(d.differences):
        more = d.count - len(d.differences)
        shown.append(f"… and {more} more difference{'s' if more != 1 else ''}")
    outcome = (
        f"Self-heal put it back: {escape(d.healed)}"
        if d.healed
        else f"Nebula has not changed it. Put it back with a deploy, or see `nebula diff {escape(d.project)} --env {escape(d.environment)}`."
    )
    out = [
        blocks.header(f"Drift: {d.service} {d.release} in {where}"),
        blocks.section(
            f"What runs differs from release {code(d.release)}:\n"
            + "\n".join(f"• {s}" for s in shown)
        ),
        blocks.section(outcome),
        blocks.context(blocks.link(d.url, "Open on the status page")),
    ]
    text = f"{where}: {d.service} drifted from {d.release} ({d.count} difference{'s' if d.count != 1 else ''})"
    if d.healed:
        text += "; self-heal put it back"
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


def drift_cleared(d: DriftCleared) -> Message:
    where = f"{d.project}/{d.environment}"
    out = [
        blocks.header(f"Drift cleared: {d.service} in {where}"),
        blocks.section(f"What runs agrees with release {code(d.release)} again."),
        blocks.context(blocks.link(d.url, "Open on the status page")),
    ]
    text = f"{where}: {d.service} agrees with {d.release} again"
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


# -- healthy, and a test ----------------------------------------------------------------------


def healthy(h: Healthy) -> Message:
    where = f"{h.project}/{h.environment}"
    before = f" (was {h.previous})" if h.previous else ""
    out = [
        blocks.header(f"Healthy: {h.service} {h.release} in {where}"),
        blocks.section(f"{code(h.release)} serves now{escape(before)}: {escape(h.kind)}."),
        blocks.context(blocks.link(h.url, f"Deployment #{h.deployment_id}")),
    ]
    text = f"{where}: {h.service} {h.release} is healthy{before}"
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


def test(t: Test) -> Message:
    text = f"Nebula test notification for channel {t.channel}, sent by {t.by}"
    out = [blocks.section(escape(text)), blocks.context(blocks.link(t.url, "Nebula"))]
    return Message(blocks.cut(text, blocks.MESSAGE_TEXT), tuple(out))


def of(
    facts: ApprovalRequest | Failure | Healthy | ProjectState | Drifted | DriftCleared | Test,
) -> Message:
    """The Slack message for any notice."""
    if isinstance(facts, ApprovalRequest):
        return approval(facts)
    if isinstance(facts, Failure):
        return failure(facts)
    if isinstance(facts, Healthy):
        return healthy(facts)
    if isinstance(facts, ProjectState):
        return project_state(facts)
    if isinstance(facts, Drifted):
        return drifted(facts)
    if isinstance(facts, DriftCleared):
        return drift_cleared(facts)
    return test(facts)
