"""``nebula status`` read from a SQLite store with plain ``sqlite3``: the document of
``GET /api/v1/status``, made by ``statusdocs`` as the server makes it, without loading
SQLAlchemy (whose import alone costs a local command five times ``kubectl version``).

Only the common case is answered here: a SQLite file at the schema this code knows, and a
project and environment that exist. Anything else (another revision, PostgreSQL, a name not
found, a read that fails) answers None, and the caller asks the API's own act, which says
what is wrong as it always has. Six short queries, whatever the history's length.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reconciler import statusdocs
from reconciler.core.states import ApprovalState
from reconciler.store import sqlitereads
from renderers.naming import release_label

Document = dict[str, Any]
Row = tuple[Any, ...]  # as sqlite3 returns it


def _at(value: str) -> datetime:
    """As ``store.base.UTCDateTime`` reads it: stored naive UTC, read back aware."""
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def _time(value: str | None) -> datetime | None:
    return _at(value) if value is not None else None


def _json(value: str | bytes | None) -> Any:
    return json.loads(value) if value is not None else None


@dataclass(frozen=True)
class Project:
    id: int
    slug: str
    repo_url: str
    branch: str
    last_commit: str | None
    blocker: str | None
    blocker_message: str | None
    blocker_commit: str | None
    last_polled_at: datetime | None
    webhook_secret: bytes | None  # only whether there is one: never the value
    removing_by: str | None
    removing_at: datetime | None
    suspended_by: str | None
    suspended_at: datetime | None
    suspended_reason: str | None

    COLUMNS = (
        "id, slug, repo_url, branch, last_commit, blocker, blocker_message, blocker_commit, "
        "last_polled_at, CASE WHEN webhook_secret IS NULL THEN NULL ELSE x'' END, "
        "removing_by, removing_at, suspended_by, suspended_at, suspended_reason"
    )

    @classmethod
    def of(cls, r: Row) -> Project:
        return cls(
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
            _time(r[8]), r[9], r[10], _time(r[11]), r[12], _time(r[13]), r[14],
        )  # fmt: skip


@dataclass(frozen=True)
class Environment:
    id: int
    project_id: int
    slug: str
    name: str
    protected: bool
    promote_from: str | None
    soak_seconds: int
    self_heal: bool
    in_file: bool
    suspended_by: str | None
    suspended_at: datetime | None
    suspended_reason: str | None

    COLUMNS = (
        "e.id, e.project_id, p.slug, e.name, e.protected, e.promote_from, e.soak_seconds, "
        "e.self_heal, e.in_file, e.suspended_by, e.suspended_at, e.suspended_reason"
    )

    @property
    def namespace(self) -> str:
        return f"{self.slug}-{self.name}"

    @classmethod
    def of(cls, r: Row) -> Environment:
        return cls(
            r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], bool(r[7]), bool(r[8]),
            r[9], _time(r[10]), r[11],
        )  # fmt: skip


@dataclass(frozen=True)
class Release:
    number: int
    image: str
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return release_label(self.number)


@dataclass(frozen=True)
class Unit:
    id: int
    environment_id: int
    name: str
    kind: str
    status: str
    active_release_id: int | None
    sync: str | None
    drift: list[dict[str, Any]] | None
    drift_checked_at: datetime | None
    sync_blocker: str | None
    sync_message: str | None
    scaled: dict[str, int] | None
    active: Release | None

    COLUMNS = (
        "u.id, u.environment_id, u.name, u.kind, u.status, u.active_release_id, u.sync, "
        "u.drift, u.drift_checked_at, u.sync_blocker, u.sync_message, u.scaled, "
        "r.number, r.image, r.config"
    )

    @classmethod
    def of(cls, r: Row) -> Unit:
        active = Release(r[12], r[13], _json(r[14])) if r[12] is not None else None
        return cls(
            r[0], r[1], r[2], r[3], r[4], r[5], r[6],
            _json(r[7]), _time(r[8]), r[9], r[10], _json(r[11]), active,
        )  # fmt: skip


@dataclass(frozen=True)
class Deployment:
    id: int
    unit_id: int
    changeset_id: int | None
    kind: str
    state: str
    blocker: str | None
    message: str | None
    release: str

    COLUMNS = "d.id, d.unit_id, d.changeset_id, d.kind, d.state, d.blocker, d.message, r.number"

    @classmethod
    def of(cls, r: Row) -> Deployment:
        return cls(r[0], r[1], r[2], r[3], r[4], r[5], r[6], release_label(r[7]))


def status(path: Path, project: str | None, env: str | None, now: datetime) -> Document | None:
    """The status document of ``path``'s store (``project``, ``env``: as the route's filters),
    or None when it is not for this read to answer."""
    if not path.is_file():
        return None  # the act creates the store (and says there is nothing in it)
    try:
        connection = sqlitereads.reader(path)()
    except sqlite3.Error:
        return None
    try:
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("BEGIN")  # one snapshot for every query
        if sqlitereads.revision(connection) != sqlitereads.HEAD:
            return None
        return _read(connection, project, env, now)
    except sqlite3.Error:
        return None
    finally:
        connection.close()


def _read(
    connection: sqlite3.Connection, slug: str | None, env_name: str | None, now: datetime
) -> Document | None:
    where, args = ("WHERE slug = ?", [slug]) if slug is not None else ("", [])
    projects = [
        Project.of(r)
        for r in connection.execute(
            f"SELECT {Project.COLUMNS} FROM projects {where} ORDER BY slug", args
        )
    ]
    if slug is not None and not projects:
        return None  # the act says which projects there are
    environments = _environments(connection, [p.id for p in projects], env_name)
    if slug is not None and env_name is not None and not environments:
        return None  # the act names the environments there are
    units = _units(connection, [e.id for e in environments])
    latest = _latest(connection, [e.id for e in environments])
    waiting = _waiting(connection, [e.id for e in environments])
    beat = connection.execute(
        "SELECT beat_at, owner FROM heartbeats WHERE name = ?", [sqlitereads.RECONCILER]
    ).fetchone()
    by_project: dict[int, list[Environment]] = defaultdict(list)
    for e in environments:
        by_project[e.project_id].append(e)
    documents = []
    for p in projects:
        shown = []
        for e in by_project[p.id]:
            services = []
            for u in units[e.id]:
                newest = latest.get(u.id)
                pair = (newest, newest.release) if newest is not None else None
                services.append(statusdocs.unit_status(u, u.active, pair, waiting))
            shown.append(statusdocs.environment_status(e, p, services))
        documents.append(statusdocs.project_status(p, shown))
    heartbeat = (_at(beat[0]), beat[1]) if beat is not None else None
    return {"projects": documents, "reconciler": statusdocs.reconciler(heartbeat, now)}


def _marks(ids: Sequence[int]) -> str:
    return ", ".join("?" * len(ids))


def _environments(
    connection: sqlite3.Connection, project_ids: Sequence[int], name: str | None
) -> list[Environment]:
    if not project_ids:
        return []
    query = (
        f"SELECT {Environment.COLUMNS} FROM environments e JOIN projects p ON p.id = e.project_id "
        f"WHERE e.project_id IN ({_marks(project_ids)})"
    )
    args: list[Any] = list(project_ids)
    if name is not None:
        query, args = query + " AND e.name = ?", [*args, name]
    return [
        Environment.of(r) for r in connection.execute(query + " ORDER BY e.position, e.id", args)
    ]


def _units(connection: sqlite3.Connection, env_ids: Sequence[int]) -> dict[int, list[Unit]]:
    found: dict[int, list[Unit]] = {i: [] for i in env_ids}
    if not env_ids:
        return found
    rows = connection.execute(
        f"SELECT {Unit.COLUMNS} FROM units u LEFT JOIN releases r ON r.id = u.active_release_id "
        f"WHERE u.environment_id IN ({_marks(env_ids)}) AND u.status != 'removed' "
        "ORDER BY u.kind DESC, u.name",
        list(env_ids),
    )
    for r in rows:
        unit = Unit.of(r)
        found[unit.environment_id].append(unit)
    return found


def _latest(connection: sqlite3.Connection, env_ids: Sequence[int]) -> dict[int, Deployment]:
    """The newest deployment of each unit: only those rows are read."""
    if not env_ids:
        return {}
    rows = connection.execute(
        f"SELECT {Deployment.COLUMNS} FROM deployments d JOIN releases r ON r.id = d.release_id "
        "WHERE d.id IN (SELECT max(id) FROM deployments "
        f"WHERE environment_id IN ({_marks(env_ids)}) GROUP BY unit_id)",
        list(env_ids),
    )
    return {d.unit_id: d for d in map(Deployment.of, rows)}


def _waiting(connection: sqlite3.Connection, env_ids: Sequence[int]) -> dict[tuple[str, int], int]:
    if not env_ids:
        return {}
    rows = connection.execute(
        "SELECT target, target_id, id FROM approvals "
        f"WHERE environment_id IN ({_marks(env_ids)}) AND state = ?",
        [*env_ids, ApprovalState.PENDING.value],
    )
    return {(target, target_id): approval_id for target, target_id, approval_id in rows}
