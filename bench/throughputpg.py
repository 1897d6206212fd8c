"""The baseline of ``bench/throughput.py``: pgbench (Debian's binary, at ``-c N -j N -M
prepared``) running, per transaction, the bare database work of a transition: claim the lowest
unfinished deployment row ``FOR UPDATE SKIP LOCKED``, move its state one step (``UPDATE ...
RETURNING``) and insert its event, in Nebula's own schema.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import psycopg

from tests.infra.postgres import PostgresServer

IMAGE = "registry.example.com/bench/svc@sha256:" + "b" * 64

PGBENCH_SCRIPT = """\
BEGIN;
SELECT id AS did, project_id AS pid, environment_id AS eid FROM deployments
  WHERE finished_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED \\gset
UPDATE deployments SET
  state = CASE state WHEN 'pending' THEN 'admitted' WHEN 'admitted' THEN 'starting'
    WHEN 'starting' THEN 'qualifying' WHEN 'qualifying' THEN 'activating'
    WHEN 'activating' THEN 'draining' ELSE 'healthy' END,
  finished_at = CASE WHEN state = 'draining' THEN now() END,
  stage_started_at = now()
  WHERE id = :did RETURNING state AS st \\gset
INSERT INTO events (at, project_id, environment_id, deployment_id, kind, state)
  VALUES (now(), :pid, :eid, :did, 'deployment', :st);
COMMIT;
"""


def seed_for_pgbench(dsn: str, deployments: int) -> None:
    """Pending deployments for pgbench, in the same schema (one project, unit and release)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO projects (id, slug, repo_url, branch, path, interval_seconds, clusters,"
            " created_at) VALUES (1, 'pgbench', '/nowhere', 'main', 'nebula.toml', 60, '{}', now())"
        )
        conn.execute(
            "INSERT INTO environments (id, project_id, name, position, protected, in_file,"
            " created_at) VALUES (1, 1, 'staging', 0, false, true, now())"
        )
        conn.execute(
            "INSERT INTO units (id, project_id, environment_id, name, kind, status, auto_deploy,"
            " skip_production_approval, next_release_number, created_at)"
            " VALUES (1, 1, 1, 'svc', 'service', 'active', true, false, 2, now())"
        )
        conn.execute(
            "INSERT INTO releases (id, unit_id, number, image, config, status, source, created_at)"
            f" VALUES (1, 1, 1, '{IMAGE}', '{{}}', 'created', 'bench', now())"
        )
        conn.execute(
            "INSERT INTO deployments (project_id, environment_id, unit_id, release_id, kind, state,"
            " requested_by, attempts, created_at, stage_started_at, queued_at)"
            f" SELECT 1, 1, 1, 1, 'deploy', 'pending', 'bench', 0, now(), now(), now()"
            f" FROM generate_series(1, {deployments})"
        )
        conn.execute("VACUUM ANALYZE")


# -- pgbench -----------------------------------------------------------------------------------


def pgbench(
    server: PostgresServer, database: str, clients: int, transitions: int, workdir: Path
) -> float:
    script = workdir / "claim-and-insert-event.sql"
    script.write_text(PGBENCH_SCRIPT, encoding="utf-8")
    per_client = max(transitions // clients, 1)
    command = [
        str(server.bindir / "pgbench"),
        "-n",
        "-f",
        str(script),
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(clients),
        "-t",
        str(per_client),
        "-h",
        "127.0.0.1",
        "-p",
        str(server.port),
        "-U",
        "nebula",
        database,
    ]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PGPASSWORD": server.password},
    )
    if result.returncode != 0:
        raise RuntimeError(f"pgbench failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    found = re.search(
        r"tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)",
        result.stdout,
    )
    if found is None:
        raise RuntimeError(f"no tps in pgbench's output:\n{result.stdout}")
    return float(found.group(1))
