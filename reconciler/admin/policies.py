"""Organization policies and weekly freeze windows, as stored settings."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core import freezes
from reconciler.core.approving import Policies
from reconciler.errors import ConfigurationError, NotFoundError, shown
from reconciler.store import schema

DEFAULTS = {"forbid_self_approval": True, "rollbacks_skip_approval": False}


def parse_bool(text: str, setting: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise ConfigurationError(
        f"{setting}: {shown(text)} is not true or false", hint="write true or false"
    )


def set_policy(session: Session, key: str, value: str) -> bool:
    if key not in DEFAULTS:
        raise ConfigurationError(
            f"unknown policy {shown(key)}", hint=f"policies: {', '.join(sorted(DEFAULTS))}"
        )
    parsed = parse_bool(value, key)
    row = session.get(schema.Setting, f"policy.{key}")
    if row is None:
        session.add(schema.Setting(key=f"policy.{key}", value=str(parsed).lower()))
    else:
        row.value = str(parsed).lower()
    return parsed


def load(session: Session) -> Policies:
    rows = {
        r.key: r.value
        for r in session.scalars(select(schema.Setting).where(schema.Setting.key.like("policy.%")))
    }
    values = {k: rows.get(f"policy.{k}", str(v).lower()) == "true" for k, v in DEFAULTS.items()}
    return Policies(**values)


# -- freeze windows ------------------------------------------------------------------------


def add_freeze(
    session: Session, clock: Clock, days: str, start: str, end: str, zone: str
) -> schema.FreezeWindowRow:
    window = freezes.parse_window(days, start, end, zone)
    row = schema.FreezeWindowRow(
        days=",".join(freezes.DAYS[d] for d in sorted(window.days)),
        start=start.strip(),
        end=end.strip(),
        zone=zone,
        created_at=clock.now(),
    )
    session.add(row)
    session.flush()
    return row


def remove_freeze(session: Session, freeze_id: int) -> None:
    row = session.get(schema.FreezeWindowRow, freeze_id)
    if row is None:
        raise NotFoundError(f"No freeze window {freeze_id}")
    session.delete(row)


def freeze_rows(session: Session) -> list[schema.FreezeWindowRow]:
    return list(session.scalars(select(schema.FreezeWindowRow).order_by(schema.FreezeWindowRow.id)))


def windows(session: Session) -> list[freezes.FreezeWindow]:
    return [freezes.stored_window(r.days, r.start, r.end, r.zone) for r in freeze_rows(session)]
