"""The store ``bench/tick.py`` measures: 1,000 services with active releases, and a history
of finished deployments and events bulk-inserted beside them (as years of use would leave).

Kept apart from the measuring so each reads whole; the figures are printed by ``tick.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, text

from reconciler.context import Context
from reconciler.store import schema

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
PROJECTS = 10
IMAGE = "registry.example.com/bench/svc@sha256:" + "a" * 64
CONFIG = '{"spec": {"kind": "service"}, "dependencies": [], "variables": [], "ports": {}}'


def naive(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)


def seed_services(ctx: Context, services: int) -> list[int]:
    """``services`` units across 10 projects, each with one active release; their unit ids."""
    per_project = services // PROJECTS
    now = naive(T0)
    with ctx.db.engine.begin() as conn:
        conn.execute(
            insert(schema.Project),
            [
                {
                    "id": p,
                    "slug": f"bench-{p}",
                    "repo_url": f"/srv/git/bench-{p}",
                    "branch": "main",
                    "path": "nebula.toml",
                    "interval_seconds": 60,
                    "clusters": {},
                    "created_at": now,
                    "next_poll_at": now + timedelta(days=365),
                }
                for p in range(1, PROJECTS + 1)
            ],
        )
        conn.execute(
            insert(schema.Environment),
            [
                {
                    "id": p,
                    "project_id": p,
                    "name": "staging",
                    "position": 0,
                    "protected": False,
                    "in_file": True,
                    "created_at": now,
                }
                for p in range(1, PROJECTS + 1)
            ],
        )
        units = list(range(1, per_project * PROJECTS + 1))
        conn.execute(
            insert(schema.Unit),
            [
                {
                    "id": u,
                    "project_id": (u - 1) // per_project + 1,
                    "environment_id": (u - 1) // per_project + 1,
                    "name": f"svc-{u}",
                    "kind": "service",
                    "status": "active",
                    "auto_deploy": True,
                    "skip_production_approval": False,
                    "next_release_number": 2,
                    "created_at": now,
                }
                for u in units
            ],
        )
        conn.execute(
            insert(schema.Release),
            [
                {
                    "id": u,
                    "unit_id": u,
                    "number": 1,
                    "image": IMAGE,
                    "config": {"spec": {"kind": "service"}},
                    "status": "active",
                    "source": "bench",
                    "created_at": now,
                }
                for u in units
            ],
        )
        conn.execute(text("UPDATE units SET active_release_id = id"))
        advance_sequences(conn, ("projects", "environments", "units", "releases"))
    analyze(ctx)
    return units


def series(dialect: str, n: int) -> str:
    """A row source of ``i`` = 1..n, as the dialect writes it fastest."""
    if dialect == "postgresql":
        return f"generate_series(1, {n}) AS s(i)"
    return (
        f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
        "SELECT i FROM s) AS s"
    )


def seed_history(ctx: Context, services: int, deployments: int, events: int) -> None:
    """Finished deployments (each with its own retired release) and their events, in bulk.

    Releases get ids above the active ones; deployment ``i`` belongs to unit ``i % services``.
    """
    dialect = ctx.db.engine.dialect.name
    per_project = services // PROJECTS
    per_deployment = max(events // deployments, 1)
    states = "CASE i % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'superseded' ELSE 'healthy' END"
    unit = f"(i % {services}) + 1"
    project = f"((i % {services}) / {per_project}) + 1"
    # Spread over time, as a real history is (the planner's statistics depend on it).
    if dialect == "postgresql":
        at = "timestamp '2025-06-01 12:00:00' + i * interval '1 minute'"
    else:
        at = "datetime('2025-06-01 12:00:00', '+' || i || ' minutes')"
    with ctx.db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO releases (id, unit_id, number, image, config, status, source, created_at,"
                " retired_at) "
                f"SELECT {services} + i, {unit}, 1 + i, '{IMAGE}', '{CONFIG}', 'unavailable', 'bench',"
                f" {at}, {at} FROM {series(dialect, deployments)}"
            )
        )
        conn.execute(
            text(
                "INSERT INTO deployments (id, project_id, environment_id, unit_id, release_id,"
                " kind, state, requested_by, attempts, created_at, stage_started_at, queued_at,"
                " admitted_at, finished_at) "
                f"SELECT i, {project}, {project}, {unit}, {services} + i, 'deploy', {states},"
                f" 'project:bench', 0, {at}, {at}, {at}, {at}, {at} "
                f"FROM {series(dialect, deployments)}"
            )
        )
        conn.execute(
            text(
                "INSERT INTO events (at, project_id, environment_id, deployment_id, kind, state,"
                " message, actor) "
                f"SELECT {at}, ((((i - 1) / {per_deployment}) % {services}) / {per_project}) + 1,"
                f" ((((i - 1) / {per_deployment}) % {services}) / {per_project}) + 1,"
                f" ((i - 1) / {per_deployment}) % {deployments} + 1, 'deployment', 'healthy', NULL,"
                f" NULL FROM {series(dialect, events)}"
            )
        )
        advance_sequences(conn, ("releases", "deployments", "events"))
    analyze(ctx)


def advance_sequences(conn: Any, tables: tuple[str, ...]) -> None:
    """Rows inserted with explicit ids leave PostgreSQL's sequences behind: catch them up."""
    if conn.dialect.name != "postgresql":
        return
    for table in tables:
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT coalesce(max(id), 1) FROM {table}))"
            )
        )


def analyze(ctx: Context) -> None:
    """Planner statistics, as a store that has been running a while has them."""
    if ctx.db.engine.dialect.name == "postgresql":
        with ctx.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    else:
        with ctx.db.engine.begin() as conn:
            conn.execute(text("ANALYZE"))
        raw = ctx.db.engine.raw_connection()  # outside any transaction
        try:
            raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()


def count_rows(ctx: Context) -> dict[str, int]:
    with ctx.db.engine.connect() as conn:
        return {
            t: int(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
            for t in ("units", "deployments", "events")
        }
