"""Listings of per-project rows (change sets, approvals): oldest first, optionally one
project's, optionally in one state, filtered in the query rather than after it; and the
newest approval of a target (what a view shows beside it)."""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.store import schema

Row = TypeVar("Row", schema.ChangeSet, schema.Approval)


def rows(
    session: Session, model: type[Row], project_id: int | None, state: StrEnum | None
) -> list[Row]:
    query = select(model).order_by(model.id)
    if project_id is not None:
        query = query.where(model.project_id == project_id)
    if state is not None:
        query = query.where(model.state == state.value)
    return list(session.scalars(query))


def newest_approval(session: Session, target: StrEnum, target_id: int) -> schema.Approval | None:
    return session.scalars(
        select(schema.Approval)
        .where(schema.Approval.target == target.value, schema.Approval.target_id == target_id)
        .order_by(schema.Approval.id.desc())
    ).first()
