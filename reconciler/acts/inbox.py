"""A member's inbox (``nebula inbox``, ``GET /api/v1/inbox``, ``POST /api/v1/inbox/read``):
always the inbox of whoever calls (a token's member; locally ``--as NAME`` or
``local-admin``), so it needs a token but no right beyond being a member of any role.
Marking an item read changes nothing but that member's own marks: it is not audited.
"""

from __future__ import annotations

from reconciler.acts.calls import Call, Document
from reconciler.admin import inbox
from reconciler.errors import ConfigurationError
from reconciler.views import iso


def _item(item: inbox.Item) -> Document:
    return {
        "id": item.id,
        "kind": item.kind.value,
        "project": item.project,
        "environment": item.environment,
        "service": item.service,
        "summary": item.summary,
        "link": item.link,
        "created_at": iso(item.created_at),
        "read": item.read,
        "approval_id": str(item.approval_id) if item.approval_id is not None else None,
        "deployment_id": str(item.deployment_id) if item.deployment_id is not None else None,
    }


def _unread(found: list[inbox.Item]) -> int:
    return sum(not item.read for item in found)


def list_inbox(call: Call) -> Document:
    ctx = call.ctx
    only_unread = call.option("unread") == "true"
    with ctx.db.reading() as session:
        found = inbox.items(session, ctx.clock, ctx.settings.public_url, call.who)
    shown = [item for item in found if not (only_unread and item.read)]
    return {"items": [_item(item) for item in shown], "unread": _unread(found)}


def mark_read(call: Call) -> Document:
    """``{"id": "approval-12"}`` marks one item read, ``{"all": true}`` every unread one."""
    item_id, everything = call.maybe("id"), call.flag("all")
    if (item_id is None) == (not everything):
        raise ConfigurationError(
            "give one item id or all, not both" if everything else "give an item id or all",
            hint="nebula inbox read approval-12, or nebula inbox read --all",
        )
    wanted = inbox.parse_id(item_id) if item_id is not None else None
    ctx = call.ctx
    with ctx.db.transaction() as session:
        found = inbox.items(session, ctx.clock, ctx.settings.public_url, call.who)
        marked = inbox.mark_read(session, ctx.clock, call.who, found, wanted)
        unread = _unread(found) - len(marked)
    return {"marked": [item.id for item in marked], "unread": unread}
