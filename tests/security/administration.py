"""The API's acts of administration, each made so it can be asked again and again (a fresh
member, token, freeze, secret or project each time): the call, its status, and whether it
took effect, judged by the audit trail (every such act is audited under its actor)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from sqlalchemy import select

from reconciler.admin import auditing, members, policies, projects, secrets, tokens
from reconciler.store import schema
from tests.plugins import people
from tests.security.acting import Acting

Call = Callable[[Acting, str | None], tuple[int, bool]]
_fresh = itertools.count(1)


def _audited(acting: Acting) -> int:
    with acting.nebula.ctx.db.reading() as session:
        return len(auditing.listing(session))


def _judged(acting: Acting, who: str | None, send: Callable[[], int]) -> tuple[int, bool]:
    """The status ``send`` got, and whether it was audited (under ``who``)."""
    before = _audited(acting)
    status = send()
    with acting.nebula.ctx.db.reading() as session:
        made = auditing.listing(session)[before:]
    assert all(e.actor == who for e in made), "audited under the token's member"
    return status, bool(made)


def _made(acting: Acting, make: Callable[..., object]) -> None:
    with acting.nebula.ctx.db.transaction() as session:
        make(session)


def _name() -> str:
    return f"fresh{next(_fresh)}"


def add_member(acting: Acting, who: str | None) -> tuple[int, bool]:
    body = {"name": _name(), "role": "member"}
    return _judged(
        acting, who, lambda: acting.call("POST", "/api/v1/members", who, body).status_code
    )


def set_member(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = _name()
    _made(acting, lambda s: people.member(s, acting.nebula.clock, name, "member"))
    path = f"/api/v1/members/{name}"
    return _judged(
        acting, who, lambda: acting.call("PATCH", path, who, {"role": "viewer"}).status_code
    )


def remove_member(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = _name()
    _made(acting, lambda s: people.member(s, acting.nebula.clock, name, "member"))
    path = f"/api/v1/members/{name}"
    return _judged(acting, who, lambda: acting.call("DELETE", path, who).status_code)


def add_grant(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = _name()
    _made(acting, lambda s: people.member(s, acting.nebula.clock, name, "member"))
    body = {"member": name, "grant": "approve", "project": "shop", "environment": "production"}
    return _judged(
        acting, who, lambda: acting.call("POST", "/api/v1/grants", who, body).status_code
    )


def remove_grant(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = _name()
    _made(acting, lambda s: people.member(s, acting.nebula.clock, name, "member"))
    body = {"member": name, "grant": "deploy", "project": "shop"}
    assert acting.call("POST", "/api/v1/grants", "olga", body).status_code == 200
    return _judged(
        acting,
        who,
        lambda: acting.call("DELETE", "/api/v1/grants", who, **body).status_code,
    )


def create_token(acting: Acting, who: str | None) -> tuple[int, bool]:
    """One's own (the only kind there is): anyone's act with a valid token."""
    body = {"name": _name()}
    return _judged(
        acting, who, lambda: acting.call("POST", "/api/v1/tokens", who, body).status_code
    )


def revoke_token(acting: Acting, who: str | None) -> tuple[int, bool]:
    """Another member's (carol's): an admin's act."""
    found: list[int] = []

    def make(session: object) -> None:
        row, _ = tokens.create(session, acting.nebula.clock, members.get(session, "carol"))  # type: ignore[arg-type]
        found.append(row.id)

    _made(acting, make)
    path = f"/api/v1/tokens/{found[0]}"
    return _judged(acting, who, lambda: acting.call("DELETE", path, who).status_code)


def set_policy(acting: Acting, who: str | None) -> tuple[int, bool]:
    path = "/api/v1/policies/forbid_self_approval"
    return _judged(
        acting, who, lambda: acting.call("PUT", path, who, {"value": "true"}).status_code
    )


def add_freeze(acting: Acting, who: str | None) -> tuple[int, bool]:
    body = {"days": "sun", "from": "03:00", "to": "03:01", "tz": "UTC"}
    judged = _judged(
        acting, who, lambda: acting.call("POST", "/api/v1/freezes", who, body).status_code
    )
    _made(acting, lambda s: [policies.remove_freeze(s, r.id) for r in policies.freeze_rows(s)])
    return judged


def remove_freeze(acting: Acting, who: str | None) -> tuple[int, bool]:
    found: list[int] = []

    def make(session: object) -> None:
        row = policies.add_freeze(session, acting.nebula.clock, "sun", "03:00", "03:01", "UTC")  # type: ignore[arg-type]
        found.append(row.id)

    _made(acting, make)
    path = f"/api/v1/freezes/{found[0]}"
    judged = _judged(acting, who, lambda: acting.call("DELETE", path, who).status_code)
    _made(acting, lambda s: [policies.remove_freeze(s, r.id) for r in policies.freeze_rows(s)])
    return judged


def set_service(acting: Acting, who: str | None) -> tuple[int, bool]:
    path = "/api/v1/projects/shop/services/api/settings"
    body = {"environment": "production", "key": "skip_production_approval", "value": "false"}
    return _judged(acting, who, lambda: acting.call("POST", path, who, body).status_code)


def set_secret(acting: Acting, who: str | None) -> tuple[int, bool]:
    path = f"/api/v1/projects/shop/environments/staging/secrets/UNUSED_{_name().upper()}"
    return _judged(acting, who, lambda: acting.call("PUT", path, who, {"value": "v"}).status_code)


def delete_secret(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = f"UNUSED_{_name().upper()}"
    ctx = acting.nebula.ctx

    def make(session: object) -> None:
        shop = projects.get(session, "shop")  # type: ignore[arg-type]
        secrets.put(session, ctx.clock, ctx.vault, shop.id, "staging", name, "v")  # type: ignore[arg-type]

    _made(acting, make)
    path = f"/api/v1/projects/shop/environments/staging/secrets/{name}"
    return _judged(acting, who, lambda: acting.call("DELETE", path, who).status_code)


def add_project(acting: Acting, who: str | None) -> tuple[int, bool]:
    body = {"slug": _name(), "repo": "/nowhere/at/all", "no_check": True}
    return _judged(
        acting, who, lambda: acting.call("POST", "/api/v1/projects", who, body).status_code
    )


def set_project(acting: Acting, who: str | None) -> tuple[int, bool]:
    path = "/api/v1/projects/shop/settings"
    body = {"key": "interval", "value": "60"}
    return _judged(acting, who, lambda: acting.call("POST", path, who, body).status_code)


def remove_project(acting: Acting, who: str | None) -> tuple[int, bool]:
    slug = _name()
    _made(
        acting,
        lambda s: projects.add(s, acting.nebula.clock, slug, "/nowhere/at/all"),
    )
    return _judged(
        acting, who, lambda: acting.call("DELETE", f"/api/v1/projects/{slug}", who).status_code
    )


def simulated_edit(acting: Acting, who: str | None) -> tuple[int, bool]:
    body = {
        "namespace": "shop-staging",
        "object": "Service/api",
        "path": "metadata.labels.touched",
        "value": "yes",
    }
    status = acting.call("POST", "/api/v1/simulated/edit", who, body).status_code
    return status, status == 200


def simulated_delete(acting: Acting, who: str | None) -> tuple[int, bool]:
    name = _name()
    cluster = acting.nebula.ctx.clusters.simulated()
    made = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}
    with cluster._call() as call:  # a stray object, as kubectl would have made it
        cluster._apply_all(call, "shop-staging", (made,))
    body = {"namespace": "shop-staging", "object": f"ConfigMap/{name}"}
    status = acting.call("POST", "/api/v1/simulated/delete", who, body).status_code
    gone = not any(o["metadata"]["name"] == name for o in cluster.objects("shop-staging"))
    return status, gone


def reconcile(acting: Acting, who: str | None) -> tuple[int, bool]:
    status = acting.call(
        "POST", "/api/v1/reconcile", who, {"project": "shop", "poll": False}
    ).status_code
    return status, status == 200


def _channel(acting: Acting) -> int:
    body = {"kind": "webhook", "target": "http://127.0.0.1:1/nowhere"}
    made = acting.call("POST", "/api/v1/notify/channels", "olga", body)
    assert made.status_code == 200, made.text
    return int(made.json()["channel"]["id"])


def add_channel(acting: Acting, who: str | None) -> tuple[int, bool]:
    body = {"kind": "webhook", "target": "https://hooks.example.com/nebula", "on": "failure"}
    return _judged(
        acting,
        who,
        lambda: acting.call("POST", "/api/v1/notify/channels", who, body).status_code,
    )


def remove_channel(acting: Acting, who: str | None) -> tuple[int, bool]:
    path = f"/api/v1/notify/channels/{_channel(acting)}"
    return _judged(acting, who, lambda: acting.call("DELETE", path, who).status_code)


def test_channel(acting: Acting, who: str | None) -> tuple[int, bool]:
    """Not audited (it changes nothing): it took effect when a test notice was recorded."""
    channel = _channel(acting)
    status = acting.call("POST", f"/api/v1/notify/channels/{channel}/test", who).status_code
    with acting.nebula.ctx.db.reading() as session:
        sent = session.scalars(
            select(schema.OutboxMessage).where(schema.OutboxMessage.channel_id == channel)
        ).all()
    return status, bool(sent)


ACTS: dict[str, tuple[str, Call]] = {
    "add member": ("/api/v1/members", add_member),
    "set member": ("/api/v1/members/{name}", set_member),
    "remove member": ("/api/v1/members/{name}", remove_member),
    "add grant": ("/api/v1/grants", add_grant),
    "remove grant": ("/api/v1/grants", remove_grant),
    "revoke another's token": ("/api/v1/tokens/{token_id}", revoke_token),
    "set policy": ("/api/v1/policies/{key}", set_policy),
    "add freeze": ("/api/v1/freezes", add_freeze),
    "remove freeze": ("/api/v1/freezes/{freeze_id}", remove_freeze),
    "set service": ("/api/v1/projects/{slug}/services/{service}/settings", set_service),
    "set secret": ("/api/v1/projects/{slug}/environments/{env}/secrets/{name}", set_secret),
    "delete secret": ("/api/v1/projects/{slug}/environments/{env}/secrets/{name}", delete_secret),
    "add project": ("/api/v1/projects", add_project),
    "set project": ("/api/v1/projects/{slug}/settings", set_project),
    "remove project": ("/api/v1/projects/{slug}", remove_project),
    "simulated edit": ("/api/v1/simulated/edit", simulated_edit),
    "simulated delete": ("/api/v1/simulated/delete", simulated_delete),
    "add channel": ("/api/v1/notify/channels", add_channel),
    "remove channel": ("/api/v1/notify/channels/{channel_id}", remove_channel),
    "test channel": ("/api/v1/notify/channels/{channel_id}/test", test_channel),
}
