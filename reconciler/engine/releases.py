"""Releases: numbered per service per environment, immutable once created.

A release freezes the unit's effective configuration with its references resolved (secrets
by reference only) and the dependencies it waits for, so a later edit of the project does not
change a deployment in flight. When one goes active, the previous active release retires; the
3 most recent retired releases stay available for rollback, older ones become unavailable
(rows and events are kept).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.planning import Value, flatten
from reconciler.core.states import ReleaseStatus
from reconciler.model import codec, graph, references, resolving
from reconciler.model.references import Literal, Reference, RefKind, Segment
from reconciler.model.specs import EnvironmentConfig, ServiceSpec, Unit
from reconciler.store import schema

ROLLBACK_DEPTH = 3


def freeze(config: EnvironmentConfig, unit: Unit) -> dict[str, Any]:
    """The frozen configuration of a release of ``unit`` in ``config``'s environment."""
    frozen: dict[str, Any] = {
        "spec": codec.unit_to_dict(unit),
        "dependencies": list(graph.dependencies(config, unit.name)),
        "variables": [],
        "ports": {s.name: s.stable_port for s in config.services if s.stable_port is not None},
    }
    if isinstance(unit, ServiceSpec):
        frozen["variables"] = [
            [key, [_segment_to_json(s) for s in segments]]
            for key, segments in resolving.resolve_variables(config, unit)
        ]
    return frozen


def _segment_to_json(segment: Segment) -> dict[str, str]:
    if isinstance(segment, Literal):
        return {"text": segment.text}
    return {"ref": segment.kind.value, "target": segment.target, "key": segment.key}


def segments_from_json(items: list[dict[str, str]]) -> tuple[Segment, ...]:
    return tuple(
        Literal(i["text"]) if "text" in i else Reference(RefKind(i["ref"]), i["target"], i["key"])
        for i in items
    )


def spec_of(release: schema.Release) -> Unit:
    return codec.unit_from_dict(release.config["spec"])


def secret_names(release: schema.Release) -> set[str]:
    """The server-side secrets the release reads: a missing one is a configuration blocker."""
    out = set()
    for _, items in release.config.get("variables", []):
        for segment in segments_from_json(items):
            if isinstance(segment, Reference) and segment.kind is references.RefKind.SECRET:
                out.add(segment.target)
    return out


def live_values(unit: schema.Unit) -> dict[str, Value]:
    """What is live now: the active release's configuration, plus unit-level settings."""
    values: dict[str, Value] = {}
    if unit.active_release is not None:
        values = flatten(spec_of(unit.active_release))
    if unit.kind == "service":
        values["auto_deploy"] = unit.auto_deploy
    return values


def headline(release: schema.Release | None) -> str | None:
    if release is None:
        return None
    spec = release.config["spec"]
    return (
        str(spec["image"]) if spec["kind"] == "service" else f"{spec['engine']} {spec['version']}"
    )


def create(
    session: Session,
    clock: Clock,
    unit: schema.Unit,
    config: dict[str, Any],
    image: str,
    source: str,
) -> schema.Release:
    """A new release with the next number of this unit (numbers are never reused or skipped)."""
    # Lock the unit's row (PostgreSQL; SQLite has one writer anyway) so two replicas or a CLI
    # beside a server never take the same number.
    session.refresh(unit, attribute_names=["next_release_number"], with_for_update=True)
    number = unit.next_release_number
    unit.next_release_number = number + 1
    release = schema.Release(
        unit_id=unit.id,
        number=number,
        image=image,
        config=config,
        status=ReleaseStatus.CREATED.value,
        source=source,
        created_at=clock.now(),
    )
    session.add(release)
    session.flush()
    return release


def activate(session: Session, clock: Clock, unit: schema.Unit, release: schema.Release) -> None:
    """``release`` serves now; the previous one retires; only the newest retired stay available."""
    previous = unit.active_release
    if previous is not None and previous.id != release.id:
        previous.status = ReleaseStatus.RETIRED.value
        previous.retired_at = clock.now()
    release.status = ReleaseStatus.ACTIVE.value
    release.retired_at = None
    unit.active_release_id = release.id
    unit.active_release = release
    session.flush()
    retired = session.scalars(
        select(schema.Release)
        .where(
            schema.Release.unit_id == unit.id,
            schema.Release.status == ReleaseStatus.RETIRED.value,
        )
        .order_by(schema.Release.retired_at.desc(), schema.Release.number.desc())
    ).all()
    for old in retired[ROLLBACK_DEPTH:]:
        old.status = ReleaseStatus.UNAVAILABLE.value


def abandon(release: schema.Release) -> None:
    """A release whose deployment ended without going healthy is never served."""
    if release.status == ReleaseStatus.CREATED.value:
        release.status = ReleaseStatus.ABANDONED.value


def available_for_rollback(session: Session, unit: schema.Unit) -> list[schema.Release]:
    return list(
        session.scalars(
            select(schema.Release)
            .where(
                schema.Release.unit_id == unit.id,
                schema.Release.status == ReleaseStatus.RETIRED.value,
            )
            .order_by(schema.Release.retired_at.desc(), schema.Release.number.desc())
        )
    )


def by_name(session: Session, unit: schema.Unit, name: str) -> schema.Release | None:
    text = name.strip().lower().removeprefix("r-").removeprefix("r")
    if not text.isdigit():
        return None
    return session.scalars(
        select(schema.Release).where(
            schema.Release.unit_id == unit.id, schema.Release.number == int(text)
        )
    ).first()
