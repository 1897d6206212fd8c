"""Every message a refused request may give (behaviour.md and the CLI's own wording).

A refusal whose text matches none of these is a bug: either a path that refuses without the
spec's message, or an internal error (an illegal transition, a crash) reaching a person.
"""

from __future__ import annotations

import re

from reconciler.core import messages

_STATES = "awaiting-approval|pending|admitted|releasing|starting|qualifying|activating|draining"
_FINALS = "healthy|failed|rejected|cancelled|superseded"
_SERVICE = r"[a-z][a-z0-9-]*"
_ENV = r"(staging|production)"
_RELEASE = r"r-\d+"

FREEZE = re.compile(
    r"Deploys to protected environments are frozen until "
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\)\."
)
CONCURRENCY = re.compile(
    r"The project is already running its maximum number of concurrent deployments \((\d+)\)\."
)
ROLE = re.compile(
    rf"(\S+) may not (approve|reject) in shop/{_ENV}: needs the approve grant or the admin role"
    r"\nhint: an admin can grant it: .+"
)
DEPLOY = re.compile(
    r"(\S+) may not (roll back|redeploy|promote|apply change sets|discard change sets) in "
    rf"shop/{_ENV}: needs the deploy grant or the admin role\nhint: an admin can grant it: .+"
)
SELF_APPROVAL = re.compile(
    re.escape(
        "Your policy forbids approving your own deploys: someone else must approve this request."
    )
)
ALREADY_DECIDED = re.compile(
    r"Approval \d+ is already (approved|rejected|expired|cancelled)"
    r"( by \S+)?( at \d{4}-\d\d-\d\d \d\d:\d\d UTC)?"
)
DRIFT = re.compile(
    r"\d+ lines? drifted since staged: .+\. Push again or restage to replace this change set\."
)

PATTERNS: dict[str, re.Pattern[str]] = {
    "freeze": FREEZE,
    "concurrency": CONCURRENCY,
    "role": ROLE,
    "deploy-forbidden": DEPLOY,
    "self-approval": SELF_APPROVAL,
    "already-decided": ALREADY_DECIDED,
    "cancel-forbidden": re.compile(
        rf"(\S+) may not cancel deployment \d+ in shop/{_ENV}: needs the deploy grant or the "
        r"admin role\nhint: an admin can grant it: .+"
    ),
    "cancel-ended": re.compile(rf"Deployment \d+ has already ended \(({_FINALS})\)"),
    "cancel-taking-traffic": re.compile(
        r"Deployment \d+ is (activating|draining): it is taking over traffic and cannot be "
        r"cancelled now\. Roll back once it is healthy\."
    ),
    "no-rollback-target": re.compile(
        rf"{_SERVICE} in {_ENV} has no earlier release to roll back to"
    ),
    "no-such-release": re.compile(rf"{_SERVICE} in {_ENV} has no release {_RELEASE}"),
    "already-active": re.compile(rf"{_RELEASE} is already active for {_SERVICE} in {_ENV}"),
    "rollback-too-old": re.compile(
        rf"{_RELEASE} is no longer available for rollback: only the 3 most recent retired "
        r"releases are kept \(.*\)"
    ),
    "never-live": re.compile(
        rf"{_RELEASE} never went live for {_SERVICE} in {_ENV}; only a retired release can "
        r"be rolled back to"
    ),
    "never-healthy": re.compile(
        rf"Cannot redeploy {_SERVICE} in {_ENV}: it has never had a healthy release"
    ),
    "promote-nothing": re.compile(rf"{_SERVICE} has no active release in {_ENV} to promote"),
    "promote-database": re.compile(rf"{_SERVICE} is a database; databases are not promoted"),
    "promote-not-there": re.compile(
        rf"{_SERVICE} is not deployed in {_ENV} yet: its first deploy there comes from nebula.toml"
    ),
    "no-service": re.compile(rf"No service '{_SERVICE}' in shop/{_ENV}"),
    "no-environment": re.compile(rf"Project 'shop' has no environment '{_SERVICE}'"),
    "not-a-draft": re.compile(
        rf"Change set \d+ is ({'|'.join(['pending-approval', 'applied', 'rejected', 'discarded', 'failed'])}); "
        r"only a draft can be applied"
    ),
    "not-discardable": re.compile(
        r"Change set \d+ is (applied|rejected|discarded|failed); only a draft or a change set "
        r"pending approval can be discarded"
    ),
    "not-applied": re.compile(
        rf"Change set \d+ not applied: ({FREEZE.pattern}|{CONCURRENCY.pattern}|{DRIFT.pattern})"
    ),
}

# What a deployment waiting for its approval says (behaviour.md, "Approvals and policies").
WAITING = {messages.WAITING_FOR_APPROVAL, messages.ONLY_ADMIN}


def classify(message: str) -> str | None:
    """The name of the spec message ``message`` is, or None."""
    # Unknown names carry a hint with the names there are (issue 29): the message is what
    # precedes it.
    bare = re.sub(r"(\n\s*hint: .*)+\Z", "", message)
    for name, pattern in PATTERNS.items():
        if pattern.fullmatch(message) or pattern.fullmatch(bare):
            return name
    return None
