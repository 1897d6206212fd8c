"""A change set just staged goes on by itself: held as a draft while a service it touches has
``auto_deploy = false``, else applied (which requests the approval of a protected
environment, and checks freezes and the concurrency cap).

Every way a change set is staged goes through here: a push (``gitops.staging``) and a new
value of a server-side secret (``rotating``).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.context import Context
from reconciler.requests import applying, changesets
from reconciler.requests.applying import Applied
from reconciler.store import schema


def held_by_auto_deploy(changeset: schema.ChangeSet) -> list[str]:
    """The services it touches whose ``auto_deploy = false`` keeps it a draft."""
    touched = {line.service for line in changeset.lines}
    services = changesets.config(changeset).services
    return sorted(s.name for s in services if s.name in touched and not s.auto_deploy)


def proceed(
    session: Session, ctx: Context, changeset: schema.ChangeSet, *, requester: str
) -> Applied | None:
    """Apply ``changeset`` unless ``auto_deploy`` holds it (then say so in its note)."""
    held = held_by_auto_deploy(changeset)
    if held:
        changesets.note(
            session,
            ctx.clock,
            changeset,
            f"Draft: {', '.join(held)} {'has' if len(held) == 1 else 'have'} "
            f"auto_deploy = false; apply it with: nebula changeset apply {changeset.id}",
            actor=requester,
        )
        return None
    return applying.apply(session, ctx, changeset, requester=requester)
