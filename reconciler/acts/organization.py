"""The organization's settings: the audit trail, policies, freeze windows, a service's
``skip_production_approval``, and server-side secrets (by name; a value goes in once, in a
request's body, and never comes back). Reading them takes a member; changing them an admin or
an owner. Every change is audited.
"""

from __future__ import annotations

import contextlib

from reconciler import views
from reconciler.acts.calls import Call, Document
from reconciler.admin import auditing, policies, projects, secrets
from reconciler.core import rights
from reconciler.core.states import AdminAction, SecretChange
from reconciler.durations import parse_duration
from reconciler.errors import ConfigurationError
from reconciler.requests import approvals, rotating
from reconciler.store import schema


def audit(call: Call) -> Document:
    start = None
    since = call.option("since")
    if since is not None:
        with contextlib.suppress(OverflowError):  # further back than time goes: everything
            start = call.ctx.clock.now() - parse_duration(since, setting="since", longest=None)
    with call.ctx.db.reading() as session:
        return {"events": [views.audit(e) for e in auditing.listing(session, start)]}


# -- policies -------------------------------------------------------------------------------


def list_policies(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        loaded = policies.load(session)
    return {
        "policies": {
            "forbid_self_approval": loaded.forbid_self_approval,
            "rollbacks_skip_approval": loaded.rollbacks_skip_approval,
        }
    }


def set_policy(call: Call) -> Document:
    key = call.param("key")
    rights.require_admin(call.who, "set policies")
    if key not in policies.DEFAULTS:
        known = ", ".join(sorted(policies.DEFAULTS))
        raise ConfigurationError(f"{key} is not a policy", hint=f"policies: {known}")
    with call.ctx.db.transaction() as session:
        old = getattr(policies.load(session), key)
        value = policies.set_policy(session, key, call.text("value"))
        approvals.refresh_waiting(session, call.ctx.clock)
        text = f"{key}: {str(old).lower()} -> {str(value).lower()}"
        call.audit(session, AdminAction.POLICY_SET, f"policy {key}", text)
    call.wake()
    return {"policy": {"key": key, "value": value}}


# -- freezes --------------------------------------------------------------------------------


def _freeze(row: schema.FreezeWindowRow) -> Document:
    return {"id": str(row.id), "days": row.days, "from": row.start, "to": row.end, "tz": row.zone}


def list_freezes(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        return {"freezes": [_freeze(r) for r in policies.freeze_rows(session)]}


def add_freeze(call: Call) -> Document:
    rights.require_admin(call.who, "add freeze windows")
    tz = call.maybe("tz") or "UTC"
    with call.ctx.db.transaction() as session:
        row = policies.add_freeze(
            session, call.ctx.clock, call.text("days"), call.text("from"), call.text("to"), tz
        )
        data = _freeze(row)
        text = f"Freeze {data['days']} {data['from']}-{data['to']} {data['tz']}"
        call.audit(session, AdminAction.FREEZE_ADD, f"freeze {row.id}", text)
    return {"freeze": data}


def remove_freeze(call: Call) -> Document:
    rights.require_admin(call.who, "remove freeze windows")
    freeze_id = call.id("freeze_id", "freeze window")
    with call.ctx.db.transaction() as session:
        policies.remove_freeze(session, freeze_id)
        text = f"Removed freeze window {freeze_id}"
        call.audit(session, AdminAction.FREEZE_REMOVE, f"freeze {freeze_id}", text)
    return {"freeze": {"id": str(freeze_id)}, "removed": True}


# -- a service's settings -------------------------------------------------------------------


def set_service(call: Call) -> Document:
    slug, service, env = call.param("slug"), call.param("service"), call.text("environment")
    key = call.text("key")
    rights.require_admin(call.who, "change service settings")
    if key != "skip_production_approval":
        raise ConfigurationError(
            f"{key} is not a service setting", hint="the one setting: skip_production_approval"
        )
    with call.ctx.db.transaction() as session:
        project = projects.get(session, slug)
        unit = projects.unit(session, projects.environment(session, project, env), service)
        unit.skip_production_approval = policies.parse_bool(call.text("value"), key)
        value = unit.skip_production_approval
        text = f"{key} = {str(value).lower()}"
        call.audit(session, AdminAction.SERVICE_SET, f"{slug}/{env}/{service}", text, project)
    return {
        "project": slug,
        "environment": env,
        "service": service,
        "skip_production_approval": value,
    }


# -- secrets --------------------------------------------------------------------------------


def list_secrets(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        project = projects.get(session, call.param("slug"))
        return {"secrets": sorted(secrets.names(session, project.id, call.param("env")))}


def set_secret(call: Call) -> Document:
    slug, env, name = call.param("slug"), call.param("env"), call.param("name")
    rights.require_admin(call.who, "set secrets")
    value = call.body.get("value")
    if not isinstance(value, str) or not value:
        raise ConfigurationError(
            "no secret value given",
            hint=f"echo -n VALUE | nebula secret set {slug} {env} {name}",
        )
    ctx = call.ctx
    with ctx.db.transaction() as session:
        project = projects.get(session, slug)
        change = secrets.put(session, ctx.clock, ctx.vault, project.id, env, name, value)
        text = f"Secret {name} set (value not recorded)"
        call.audit(session, AdminAction.SECRET_SET, f"{slug}/{env} {name}", text, project)
        # A new value is an input of every release that reads it: their change set
        # (behaviour.md "Resolved values"); a secret that was missing releases what was held.
        staged = None
        if change is SecretChange.CHANGED:
            staged = rotating.stage(session, ctx, project, env, name, call.who.name)
        changeset = views.changeset_of(session, staged) if staged is not None else None
    call.wake()
    return {"secret": name, "change": change.value, "changeset": changeset}


def delete_secret(call: Call) -> Document:
    slug, env, name = call.param("slug"), call.param("env"), call.param("name")
    rights.require_admin(call.who, "delete secrets")
    with call.ctx.db.transaction() as session:
        project = projects.get(session, slug)
        secrets.delete(session, project.id, env, name)
        text = f"Secret {name} deleted"
        call.audit(session, AdminAction.SECRET_DELETE, f"{slug}/{env} {name}", text, project)
    return {"secret": name, "deleted": True}
