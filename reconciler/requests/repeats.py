"""Asking twice is asking once: a rollback, promote or redeploy identical to one still waiting
for approval or in flight returns that one, instead of a second release and a second approval
(issue 29: three ``nebula promote`` in a row made three of each, and the approvers three
messages to decide).

Identical means what a person would call the same request: the same kind of deployment of the
same service in the same environment, of the same release (a rollback) or of a release frozen
from the same image and configuration (a promote, a redeploy). Who asks does not matter (each
caller's rights are checked before this is asked); a different target or a different image is
a new request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from reconciler.core.states import ApprovalTarget, DeploymentKind
from reconciler.engine import recording, releases
from reconciler.model.frozen import FrozenRelease
from reconciler.requests import approvals
from reconciler.store import schema


@dataclass(frozen=True)
class Repeated:
    deployment: schema.Deployment
    approval: schema.Approval | None


def of_release(
    session: Session, unit: schema.Unit, kind: DeploymentKind, release: schema.Release
) -> Repeated | None:
    """The open deployment of ``kind`` that deploys ``release`` itself (a rollback)."""
    return _first(session, unit, kind, lambda d: d.release_id == release.id)


def of_config(
    session: Session, unit: schema.Unit, kind: DeploymentKind, config: FrozenRelease
) -> Repeated | None:
    """The open deployment of ``kind``, asked by a person (a push's deploys belong to their
    change set), whose release froze ``config``: a promote or a redeploy made again."""
    return _first(
        session,
        unit,
        kind,
        lambda d: d.changeset_id is None and releases.frozen(d.release) == config,
    )


def _first(
    session: Session,
    unit: schema.Unit,
    kind: DeploymentKind,
    same: Callable[[schema.Deployment], bool],
) -> Repeated | None:
    # The unit's row is locked first (as creating a release does), so two identical requests
    # at the same moment take turns and the second finds the first's deployment.
    session.refresh(unit, attribute_names=["next_release_number"], with_for_update=True)
    for deployment in recording.open_for_unit(session, unit.id):
        if deployment.kind == kind.value and same(deployment):
            approval = approvals.for_target(session, ApprovalTarget.DEPLOYMENT, deployment.id)
            return Repeated(deployment, approval)
    return None
