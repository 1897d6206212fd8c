"""Deployment states as behaviour.md spells them ("Deployment states"), in the order a deployment
walks them. Written out here, not read from ``reconciler.core.states``, so that a renamed or
reordered state fails the tests that compare timelines with these."""

from __future__ import annotations

# What a deployment passes through between being requested and going healthy.
ON_THE_WAY = (
    "pending",
    "admitted",
    "releasing",
    "starting",
    "qualifying",
    "activating",
    "draining",
)
FINALS = ("healthy", "failed", "rejected", "cancelled", "superseded")
EVERY_STATE = ("awaiting-approval", *ON_THE_WAY, *FINALS)

# The events of a deployment that goes healthy, with and without a release command.
WITH_RELEASE = [*ON_THE_WAY, "healthy"]
WITHOUT_RELEASE = [state for state in WITH_RELEASE if state != "releasing"]
