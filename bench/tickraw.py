"""The baseline of ``bench/tick.py``'s transitions: the same statements the engine sends for
one state change and its event (read the row, update it, insert the event), sent by the bare
drivers with the same transactions, so the ratio shows what the engine adds on top.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
from tickseed import T0, naive

SELECT_DEPLOYMENT = (
    "SELECT id, project_id, environment_id, unit_id, release_id, previous_release_id,"
    " changeset_id, kind, state, blocker, message, requested_by, stage_marker, attempts,"
    " lease_owner, lease_expires_at, next_attempt_at, stage_started_at, waiting_on_id,"
    " created_at, queued_at, admitted_at, finished_at FROM deployments WHERE id = {p}"
)
UPDATE_DEPLOYMENT = "UPDATE deployments SET state={p}, admitted_at={p} WHERE id = {p}"
INSERT_EVENT = (
    "INSERT INTO events (at, project_id, environment_id, deployment_id, changeset_id,"
    " approval_id, kind, state, message, actor) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p},"
    " {p}, {p})"
)


def _event(now: Any, row: Any, deployment_id: int) -> tuple[Any, ...]:
    """INSERT_EVENT's values for a deployment row moved to admitted, as the engine writes it."""
    return (now, row[1], row[2], deployment_id, None, None, "deployment", "admitted", None, None)


def raw_sqlite_transitions(path: str, ids: list[int], batch: int) -> None:
    """The same statements through sqlite3, with the store's pragmas and BEGIN IMMEDIATE."""
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in (
        "journal_mode=WAL",
        "foreign_keys=ON",
        "busy_timeout=30000",
        "synchronous=NORMAL",
    ):
        conn.execute(f"PRAGMA {pragma}")
    select, update, insert = (
        s.format(p="?") for s in (SELECT_DEPLOYMENT, UPDATE_DEPLOYMENT, INSERT_EVENT)
    )
    now = naive(T0).isoformat(sep=" ")
    try:
        for start in range(0, len(ids), batch):
            conn.execute("BEGIN IMMEDIATE")
            for deployment_id in ids[start : start + batch]:
                row = conn.execute(select, (deployment_id,)).fetchone()
                assert row is not None and row[8] == "pending"
                conn.execute(update, ("admitted", now, deployment_id))
                conn.execute(
                    insert,
                    _event(now, row, deployment_id),
                )
            conn.execute("COMMIT")
    finally:
        conn.close()


def raw_postgres_transitions(dsn: str, ids: list[int], batch: int) -> None:
    """The same statements through psycopg (server-side binding, as SQLAlchemy's psycopg)."""
    select, update, insert = (
        s.format(p="%s") for s in (SELECT_DEPLOYMENT, UPDATE_DEPLOYMENT, INSERT_EVENT)
    )
    insert += " RETURNING id"
    now = naive(T0)
    with psycopg.connect(dsn) as conn:
        for start in range(0, len(ids), batch):
            with conn.transaction(), conn.cursor() as cursor:
                for deployment_id in ids[start : start + batch]:
                    cursor.execute(select, (deployment_id,))
                    row = cursor.fetchone()
                    assert row is not None and row[8] == "pending"
                    cursor.execute(update, ("admitted", now, deployment_id))
                    cursor.execute(
                        insert,
                        _event(now, row, deployment_id),
                    )
                    cursor.fetchone()
