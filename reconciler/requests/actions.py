"""What people ask for (CLI, API): rollback, promote, redeploy, cancel.

Each goes through the same path as a push: freeze and concurrency guards, an approval in a
protected environment (unless a rule passes it at once), then supersession when it starts.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace

from sqlalchemy.orm import Session

from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core.states import ApprovalTarget, DeploymentKind, ReleaseStatus
from reconciler.engine import queueing, recording, releases
from reconciler.errors import NotFoundError, RefusedError
from reconciler.model.specs import ServiceSpec
from reconciler.requests import approvals, guards
from reconciler.store import schema


@dataclass
class Requested:
    deployment: schema.Deployment
    approval: schema.Approval | None = None
    ended: list[queueing.Ended] = field(default_factory=list)


def request(
    session: Session,
    ctx: Context,
    unit: schema.Unit,
    release: schema.Release,
    kind: DeploymentKind,
    requester: str,
) -> Requested:
    env = unit.environment
    guards.check_freeze(session, ctx.clock, env, kind)
    outcome = None
    if env.protected:
        outcome = approvals.evaluate(session, kind, requester, (unit.skip_production_approval,))
    passes = outcome is None or outcome.rule is not None
    if passes:
        ending = [
            d.id
            for d in recording.open_for_unit(session, unit.id)
            if not queueing.S(d.state).is_taking_traffic
        ]
        guards.check_concurrency(session, env.project, [unit.id], ending)
    deployment = queueing.create(
        session,
        ctx.clock,
        unit,
        release,
        kind,
        requester,
        awaiting_approval=not passes,
        message=outcome.message if outcome is not None else None,
    )
    result = Requested(deployment)
    if outcome is not None:
        result.approval = approvals.request(
            session,
            ctx.clock,
            ctx.settings,
            env,
            ApprovalTarget.DEPLOYMENT,
            deployment.id,
            kind.value,
            requester,
            outcome,
        )
    if passes:
        result.ended = queueing.enter_pending(session, ctx.clock, deployment, requester)
    return result


def _unit(session: Session, slug: str, service: str, env_name: str) -> schema.Unit:
    project = projects.get(session, slug)
    env = projects.environment(session, project, env_name)
    return projects.unit(session, env, service)


def rollback(
    session: Session,
    ctx: Context,
    slug: str,
    service: str,
    env_name: str,
    to: str | None,
    requester: str,
) -> Requested:
    unit = _unit(session, slug, service, env_name)
    available = releases.available_for_rollback(session, unit)
    where = f"{service} in {env_name}"
    if to is None:
        if not available:
            raise RefusedError(f"{where} has no earlier release to roll back to", code="conflict")
        target = available[0]
    else:
        found = releases.by_name(session, unit, to)
        if found is None:
            raise NotFoundError(f"{where} has no release {to}")
        target = found
        if target.status == ReleaseStatus.ACTIVE.value:
            raise RefusedError(f"{target.name} is already active for {where}", code="conflict")
        if target.status == ReleaseStatus.UNAVAILABLE.value:
            kept = ", ".join(r.name for r in available) or "none"
            raise RefusedError(
                f"{target.name} is no longer available for rollback: only the "
                f"{releases.ROLLBACK_DEPTH} most recent retired releases are kept ({kept})",
                code="conflict",
            )
        if target.status != ReleaseStatus.RETIRED.value:
            raise RefusedError(
                f"{target.name} never went live for {where}; only a retired release can be "
                "rolled back to",
                code="conflict",
            )
    return request(session, ctx, unit, target, DeploymentKind.ROLLBACK, requester)


def promote(
    session: Session,
    ctx: Context,
    slug: str,
    service: str,
    source_env: str,
    target_env: str,
    requester: str,
) -> Requested:
    from reconciler.gitops.staging import recorded_config

    if source_env == target_env:
        # Refused (409), not invalid input: the request is well formed, what it asks is not.
        raise RefusedError(
            f"Cannot promote {service} from {source_env} to itself: --from and --to must be "
            "different environments",
            code="conflict",
            hint=f"to deploy the same image again, use: nebula redeploy {slug} {service} "
            f"--env {source_env}",
        )
    source = _unit(session, slug, service, source_env)
    if source.active_release is None:
        raise RefusedError(
            f"{service} has no active release in {source_env} to promote", code="conflict"
        )
    if source.kind != "service":
        raise RefusedError(f"{service} is a database; databases are not promoted", code="conflict")
    project = projects.get(session, slug)
    env = projects.environment(session, project, target_env)
    config = recorded_config(env)
    spec = config.service(service) if config is not None else None
    target = projects.unit(session, env, service) if spec is not None else None
    if config is None or spec is None or target is None:
        raise RefusedError(
            f"{service} is not deployed in {target_env} yet: its first deploy there comes from "
            "nebula.toml",
            code="conflict",
        )
    image = source.active_release.image
    promoted: ServiceSpec = replace(spec, image=image)
    release = releases.create(
        session,
        ctx.clock,
        target,
        releases.freeze(config, promoted),
        image,
        f"promoted from {source_env} {source.active_release.name}",
    )
    return request(session, ctx, target, release, DeploymentKind.PROMOTE, requester)


def redeploy(
    session: Session, ctx: Context, slug: str, service: str, env_name: str, requester: str
) -> Requested:
    unit = _unit(session, slug, service, env_name)
    active = unit.active_release
    if active is None:
        raise RefusedError(
            f"Cannot redeploy {service} in {env_name}: it has never had a healthy release",
            code="conflict",
        )
    release = releases.create(
        session,
        ctx.clock,
        unit,
        copy.deepcopy(active.config),
        active.image,
        f"redeploy of {active.name}",
    )
    return request(session, ctx, unit, release, DeploymentKind.DEPLOY, requester)


def cancel(
    session: Session, ctx: Context, deployment_id: int, requester: str | None
) -> schema.Deployment:
    deployment = session.get(schema.Deployment, deployment_id, with_for_update=True)
    if deployment is None:
        raise NotFoundError(
            f"No deployment {deployment_id}", hint="list them with: nebula deployments"
        )
    queueing.cancel(session, ctx.clock, deployment, requester)
    return deployment
