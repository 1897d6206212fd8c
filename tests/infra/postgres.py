"""A throwaway PostgreSQL cluster on a free loopback port, from Debian's server binaries.

PostgreSQL refuses to run as root, so when the tests run as root (CI does) every server
command runs as the `postgres` user the Debian package creates. Durability is switched off:
these clusters live for one test session.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from tests.infra.processes import StartError, free_port, log_tail

USER = "nebula"


def find_bindir() -> Path:
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not candidates:
        raise StartError(
            "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)"
        )
    return candidates[-1].parent


class PostgresServer:
    def __init__(self) -> None:
        self.bindir = find_bindir()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                raise StartError("running as root and `runuser` is missing (util-linux)")
            try:
                import pwd

                owner = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise StartError(
                    "running as root and there is no `postgres` user to run "
                    "the server as (PostgreSQL refuses root)"
                ) from exc
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.root = Path(tempfile.mkdtemp(prefix="nebula-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.sockets.mkdir()
        self.log_path = self.root / "postgres.log"
        self.log_path.touch()
        if self._as_user:
            for path in (self.root, self.sockets, self.log_path):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.port = free_port()
        self.password = secrets.token_hex(16)

    def url(self, database: str = USER) -> str:
        """A SQLAlchemy URL (psycopg 3 driver) for `database` on this server."""
        return f"postgresql+psycopg://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str, timeout: float = 120) -> None:
        command = [*self._as_user, *argv]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=timeout, cwd=self.root)
        except subprocess.CalledProcessError as exc:
            output = (exc.stdout + exc.stderr).decode(errors="replace").strip()
            raise StartError(
                f"{Path(argv[0]).name} failed ({exc.returncode}): {output}\n"
                f"{log_tail(self.log_path)}"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise StartError(
                f"{Path(argv[0]).name} timed out after {timeout:.0f}s:\n{log_tail(self.log_path)}"
            ) from exc

    def start(self) -> None:
        fresh = not (self.data / "PG_VERSION").exists()
        if fresh:
            self._initdb()
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log_path),
            "-w",
            "-t",
            "60",
            "start",
        )
        if fresh:
            self.create_database(USER)

    def _initdb(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._as_user:
            import pwd

            owner = pwd.getpwnam("postgres")
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        pwfile.chmod(0o600)
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.sockets}'",
            "max_connections": "200",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "log_min_messages": "warning",
        }
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())

    def stop(self, mode: str = "fast") -> None:
        """Stops the server: "smart", "fast" (cut sessions) or "immediate" (like a crash)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """Stops and starts the server on the same port; open connections are cut."""
        self.stop(mode)
        self.start()

    @property
    def running(self) -> bool:
        pid = self.data / "postmaster.pid"
        return pid.exists()

    def ensure_running(self) -> None:
        if not self.running:
            self.start()

    def _admin(self) -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=USER,
            password=self.password,
            dbname="postgres",
            autocommit=True,
            connect_timeout=10,
        )

    def create_database(self, name: str) -> str:
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        if self.running:
            with contextlib.suppress(StartError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
