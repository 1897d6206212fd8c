"""What people ask for (CLI, API): rollback, promote, redeploy, cancel.

Each goes through the same path as a push: freeze and concurrency guards, an approval in a
protected environment (unless a rule passes it at once), then supersession when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from reconciler import suggestions
from reconciler.admin import principals, projects
from reconciler.context import Context
from reconciler.core import approving, rights
from reconciler.core.rights import Principal
from reconciler.core.states import (
    AdminAction,
    ApprovalTarget,
    DeploymentKind,
    DeploymentState,
    GrantKind,
    ReleaseStatus,
    ServiceKind,
)
from reconciler.engine import queueing, recording, releases
from reconciler.engine.queueing import Ended
from reconciler.errors import ConflictError, GateError, NotFoundError
from reconciler.model.frozen import FrozenRelease
from reconciler.requests import approvals, gates, guards, repeats, starting
from reconciler.store import events, schema


@dataclass
class Requested:
    deployment: schema.Deployment
    approval: schema.Approval | None = None
    ended: list[Ended] = field(default_factory=list)
    repeated: bool = False  # an identical request was still open: this is that one

    @classmethod
    def again(cls, repeat: repeats.Repeated) -> Requested:
        return cls(repeat.deployment, repeat.approval, repeated=True)


def request(
    session: Session,
    ctx: Context,
    unit: schema.Unit,
    release: schema.Release,
    kind: DeploymentKind,
    requester: str,
    *,
    skipped_gate: str | None = None,
) -> Requested:
    """``skipped_gate``: why the promotion gate refused it, when an admin passed it anyway
    (``--skip-gate``): recorded in its event and shown in its approval request."""
    env = unit.environment
    guards.check_freeze(session, ctx.clock, env, kind)
    outcome = None
    if env.protected:
        outcome = approvals.evaluate(
            session, env, kind, requester, (unit.skip_production_approval,)
        )
    passes = outcome is None or outcome.rule is not None
    if passes:
        ending = [
            d.id
            for d in recording.open_for_unit(session, unit.id)
            if not DeploymentState(d.state).is_taking_traffic
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
    evidence = gates.proof(session, ctx, env, [(unit.name, release.image)])
    if skipped_gate is not None:
        skipped = f"Promotion gate skipped by {requester} (--skip-gate): {skipped_gate}"
        events.deployment(session, ctx.clock.now(), deployment, skipped, actor=requester)
        events.admin(
            session,
            ctx.clock.now(),
            AdminAction.PROMOTE_SKIP_GATE,
            f"{env.project.slug}/{env.name} {unit.name}",
            f"Promoted {unit.name} {release.name} past its gate: {skipped_gate}",
            actor=requester,
            project=env.project,
        )
        evidence = [skipped, *(evidence or [])]
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
            evidence=evidence,
        )
    if passes:
        result.ended = starting.start(session, ctx.clock, deployment, requester)
    return result


def _environment(
    session: Session, slug: str, env_name: str, who: Principal, verb: str
) -> schema.Environment:
    """The environment asked of, once ``who`` may deploy there: who may not learns no more
    than that (not which services or releases it has)."""
    env = projects.environment(session, projects.get(session, slug), env_name)
    rights.require(who, GrantKind.DEPLOY, principals.where(env), verb=verb)
    return env


def rollback(
    session: Session,
    ctx: Context,
    slug: str,
    service: str,
    env_name: str,
    to: str | None,
    who: Principal,
) -> Requested:
    unit = projects.unit(session, _environment(session, slug, env_name, who, "roll back"), service)
    available = releases.available_for_rollback(session, unit)
    target = _rollback_target(session, unit, available, f"{service} in {env_name}", to)
    repeat = repeats.of_release(session, unit, DeploymentKind.ROLLBACK, target)
    if repeat is not None:
        return Requested.again(repeat)
    return request(session, ctx, unit, target, DeploymentKind.ROLLBACK, who.name)


def _rollback_target(
    session: Session,
    unit: schema.Unit,
    available: list[schema.Release],
    where: str,
    to: str | None,
) -> schema.Release:
    """The release ``--to`` names (default: the newest retired one), if it can be rolled to."""
    if to is None:
        if not available:
            raise ConflictError(f"{where} has no earlier release to roll back to")
        return available[0]
    target = releases.by_name(session, unit, to)
    if target is None:
        raise NotFoundError(
            f"{where} has no release {to}",
            hint=suggestions.hint(
                to,
                [r.name for r in available],
                "releases to roll back to",
                none="there is no earlier release to roll back to",
                near=False,
            ),
        )
    if target.status == ReleaseStatus.ACTIVE.value:
        raise ConflictError(f"{target.name} is already active for {where}")
    if target.status == ReleaseStatus.UNAVAILABLE.value:
        kept = ", ".join(r.name for r in available) or "none"
        raise ConflictError(
            f"{target.name} is no longer available for rollback: only the "
            f"{releases.ROLLBACK_DEPTH} most recent retired releases are kept ({kept})"
        )
    if target.status != ReleaseStatus.RETIRED.value:
        raise ConflictError(
            f"{target.name} never went live for {where}; only a retired release can be "
            "rolled back to"
        )
    return target


def promote(
    session: Session,
    ctx: Context,
    slug: str,
    service: str,
    source_env: str,
    target_env: str,
    who: Principal,
    *,
    skip_gate: bool = False,
) -> Requested:
    """The source environment's active image, as a new release of the target's settings.
    Into an environment with a promotion gate only once the image soaked there, unless an
    admin or owner passes ``skip_gate`` (recorded)."""
    if source_env == target_env:
        # Refused (409), not invalid input: the request is well formed, what it asks is not.
        raise ConflictError(
            f"Cannot promote {service} from {source_env} to itself: --from and --to must be "
            "different environments",
            hint=f"to deploy the same image again, use: nebula redeploy {slug} {service} "
            f"--env {source_env}",
        )
    env = _environment(session, slug, target_env, who, "promote")
    source = projects.unit(session, projects.environment(session, env.project, source_env), service)
    guards.check_suspended(env)
    if source.active_release is None:
        raise ConflictError(f"{service} has no active release in {source_env} to promote")
    if source.kind == ServiceKind.DATABASE.value:
        raise ConflictError(f"{service} is a database; databases are not promoted")
    if source.kind != ServiceKind.SERVICE.value:
        raise ConflictError(
            f"{service} are an environment's raw manifests; only services are promoted",
            hint="raw manifests reach each environment through nebula.toml",
        )
    config = projects.recorded_config(env)
    spec = config.service(service) if config is not None else None
    target = projects.unit(session, env, service) if spec is not None else None
    if config is None or spec is None or target is None:
        raise ConflictError(
            f"{service} is not deployed in {target_env} yet: its first deploy there comes from "
            "nebula.toml"
        )
    image = source.active_release.image
    refused = gates.promotion(session, ctx, env, service, image)
    if refused is not None and not skip_gate:
        raise GateError(
            refused,  # the gate's own words, as behaviour.md gives them
            hint="wait until it has soaked, or (an admin or owner) pass --skip-gate",
        )
    if refused is not None:  # skipped: that is an admin's call
        rights.require_admin(who, f"skip the promotion gate ({refused})")
    frozen = FrozenRelease.of(config, spec).with_image(image)
    repeat = repeats.of_config(session, target, DeploymentKind.PROMOTE, frozen)
    if repeat is not None:
        return Requested.again(repeat)
    release = releases.create(
        session,
        ctx.clock,
        target,
        frozen,
        f"promoted from {source_env} {source.active_release.name}",
    )
    return request(
        session, ctx, target, release, DeploymentKind.PROMOTE, who.name, skipped_gate=refused
    )


def redeploy(
    session: Session, ctx: Context, slug: str, service: str, env_name: str, who: Principal
) -> Requested:
    unit = projects.unit(session, _environment(session, slug, env_name, who, "redeploy"), service)
    guards.check_suspended(unit.environment)
    active = unit.active_release
    if active is None:
        raise ConflictError(
            f"Cannot redeploy {service} in {env_name}: it has never had a healthy release"
        )
    frozen = releases.frozen(active)
    repeat = repeats.of_config(session, unit, DeploymentKind.DEPLOY, frozen)
    if repeat is not None:
        return Requested.again(repeat)
    release = releases.create(session, ctx.clock, unit, frozen, f"redeploy of {active.name}")
    return request(session, ctx, unit, release, DeploymentKind.DEPLOY, who.name)


def cancel(session: Session, ctx: Context, deployment_id: int, who: Principal) -> schema.Deployment:
    deployment = session.get(schema.Deployment, deployment_id, with_for_update=True)
    if deployment is None:
        raise NotFoundError(
            f"No deployment {deployment_id}", hint="list them with: nebula deployments"
        )
    approving.check_canceller(
        who,
        deployment.requested_by,
        principals.where(deployment.environment),
        deployment=deployment.id,
    )
    starting.cancel(session, ctx.clock, deployment, who.name)
    return deployment
