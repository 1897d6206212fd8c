"""The exact messages behaviour.md names. Tests assert them verbatim; so do users' scripts."""

from __future__ import annotations

from datetime import datetime


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
