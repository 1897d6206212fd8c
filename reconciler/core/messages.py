"""The exact messages behaviour.md names. Tests assert them verbatim; so do users' scripts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from reconciler.core.drifts import Drift


def superseded_by(release: str) -> str:
    return f"Superseded by {release}"


def waiting_for_takeover(release: str) -> str:
    return f"Waiting for {release} to finish taking over traffic"


def waiting_for_dependency(dependency: str, release: str) -> str:
    return f"Waiting for {dependency} to finish deploying ({release})"


def dependency_failed(dependency: str, release: str, service: str, running: str | None) -> str:
    keeps = f" {service} keeps running {running}." if running else ""
    return (
        f"Not deployed: {dependency} failed to deploy ({release}).{keeps} "
        f"Deploy {service} again once {dependency} is healthy."
    )


def replaced_by(short_sha: str) -> str:
    return f"Replaced by the change set from {short_sha}"


ONLY_ADMIN = (
    "Waiting for approval, but no one else in this organization can approve it: your policy "
    "forbids approving your own deploys and you are its only admin."
)

WAITING_FOR_APPROVAL = "Waiting for approval"


def concurrency_limit(limit: int) -> str:
    return f"The project is already running its maximum number of concurrent deployments ({limit})."


def frozen_until(ends_at: datetime, zone: str) -> str:
    local = ends_at.strftime("%a %Y-%m-%d %H:%M")
    return f"Deploys to protected environments are frozen until {local} ({zone})."


def then(message: str, more: str) -> str:
    """``message`` as a sentence followed by ``more``: one full stop, never two."""
    text = message.rstrip()
    return f"{text}{'' if text.endswith(('.', '!', '?')) else '.'} {more}"


def keeps_serving(release: str | None) -> str:
    if release is None:
        return "Nothing was serving before; nothing is serving now."
    return f"{release} keeps serving."


def stopped_for_volume(release: str) -> str:
    """A volume release stops the previous one before starting: nothing serves if it fails."""
    return (
        f"Nothing is serving now: {release} was stopped to free the volume; "
        "redeploy to start it again."
    )


def suspended(by: str, at: datetime, reason: str) -> str:
    """Why nothing is applied in a suspended project or environment (the change sets' note,
    and the refusal of apply, redeploy and promote)."""
    return f"Suspended by {by} at {_utc(at):%Y-%m-%d %H:%M} UTC: {reason}"


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


DRIFT_CLEARED = "Drift cleared"


def drift_found(found: Sequence[Drift], release: str) -> str:
    """``Drift: Deployment/api-r3 spec.replicas is 5, release r-3 says 2``: the first
    difference, and how many more there are."""
    first = found[0]
    if first.missing:
        text = f"Drift: {first.object} is missing, release {release} has it"
    elif first.hidden:
        text = f"Drift: {first.object} {first.path} differs from release {release}"
    elif first.live is None:
        text = (
            f"Drift: {first.object} {first.path} is not set, release {release} says {first.desired}"
        )
    else:
        text = f"Drift: {first.object} {first.path} is {first.live}, release {release} says {first.desired}"
    more = len(found) - 1
    if more:
        text += f" (and {more} more difference{'s' if more != 1 else ''})"
    return text


def self_healed(found: Sequence[Drift]) -> str:
    """``Self-heal: re-applied Deployment/api-r3 (spec.replicas 5 -> 2)``: each object put
    back, with what it had."""
    by_object: dict[str, list[Drift]] = {}
    for drift in found:
        by_object.setdefault(drift.object, []).append(drift)
    parts = []
    for ref, drifts in by_object.items():
        changes = []
        for d in drifts:
            if d.missing:
                changes.append("was missing")
            elif d.hidden:
                changes.append(f"{d.path} changed")
            else:
                changes.append(
                    f"{d.path} {d.live if d.live is not None else 'unset'} -> {d.desired}"
                )
        parts.append(f"{ref} ({', '.join(changes)})")
    return f"Self-heal: re-applied {'; '.join(parts)}"
