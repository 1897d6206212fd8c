"""When the store cannot do what is asked, people read one line and a hint, never a
traceback; reading still works when writing cannot; a database outage is one warning in the
server's log, not a traceback per job per second. And the files are their owner's only.

A read-only store is made as an operator would meet it: files 0400 in a directory 0500,
and (as root, who ignores modes) the command run without CAP_DAC_OVERRIDE. A full disk is a
small tmpfs filled up (when this machine lets the test mount one), and SQLite's own
``max_page_count`` in-process (always).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event, insert, select

from reconciler import bootstrap, scheduling, settings
from reconciler.admin import projects as project_rows
from reconciler.errors import StoreError
from reconciler.scheduling import Scheduler, Timings
from reconciler.store import database, leases, schema
from tests.infra.postgres import PostgresServer
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import ServeProcess, nebula_command, serve_env

READS = "reading commands (status, deployments, changesets, approvals) still work"


def _restricted() -> list[str]:
    """What runs a command as a user the files' modes apply to."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.fail("running as root and setpriv (util-linux) is missing")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def _nebula(
    env: dict[str, str], *args: str, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), *nebula_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _store(tmp_path: Path) -> dict[str, str]:
    """A store with a member, a project on a real repository and the git cache made."""
    env = serve_env(tmp_path)
    repo = GitRepo(tmp_path / "repo", bare=False)
    repo.commit({"nebula.toml": "[environments.staging]\n"}, "First")
    ctx = bootstrap.open_context(settings.load(environ=env), git=True)
    try:
        with ctx.db.transaction() as session:
            people.member(session, ctx.clock, "alice", "admin")
            project_rows.add(session, ctx.clock, "shop", repo.url)
    finally:
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()
    return env


def _one_error(result: subprocess.CompletedProcess[str], start: str) -> None:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr  # error: ..., hint: ...
    assert lines[0].startswith(f"error: {start}"), lines[0]
    assert lines[1].startswith("hint: ") and READS in lines[1], lines[1]
    assert "Traceback" not in result.stderr


def test_the_state_directory_and_the_store_are_their_owners_only(
    nebula: Nebula, tmp_path: Path
) -> None:
    state = tmp_path / "fresh" / ".nebula"
    env = {**serve_env(tmp_path), "NEBULA_STATE_DIR": str(state)}
    assert _nebula(env, "member", "add", "alice", "--role", "admin").returncode == 0
    assert _nebula(env, "member", "list").returncode == 0
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in state.iterdir() if p.is_file()}
    assert modes["nebula.db"] == 0o600 and modes["secret.key"] == 0o600
    assert {m for name, m in modes.items() if name.startswith("nebula.db")} == {0o600}
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    # A store an earlier version left readable by all is tightened when it is opened.
    (state / "nebula.db").chmod(0o644)
    assert _nebula(env, "member", "list").returncode == 0
    assert stat.S_IMODE((state / "nebula.db").stat().st_mode) == 0o600


def test_a_read_only_store_is_one_line_per_write_and_reads_still_work(tmp_path: Path) -> None:
    env = _store(tmp_path)
    state = Path(env["NEBULA_STATE_DIR"])
    for path in state.iterdir():
        if path.is_file():
            path.chmod(0o400)
    state.chmod(0o500)
    try:
        as_user = _restricted()
        writing = [
            ["member", "add", "bob", "--role", "admin"],
            ["project", "set", "shop", "interval", "30"],
            ["reconcile"],
            ["serve", "--port", "1"],
        ]
        for args in writing:
            _one_error(_nebula(env, *args, prefix=as_user), "the state store is read-only: ")
        listed = _nebula(env, "member", "list", "--json", prefix=as_user)
        assert listed.returncode == 0, listed.stderr
        assert '"alice"' in listed.stdout
        for args in (["status", "--json"], ["project", "list"], ["changesets"], ["approvals"]):
            result = _nebula(env, *args, prefix=as_user)
            assert result.returncode == 0, (args, result.stderr)
            assert "error:" not in result.stderr and "Traceback" not in result.stderr, args
    finally:
        state.chmod(0o700)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (when this machine lets a test mount one)."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_named_as_such_and_reads_still_work(full_disk: Path, tmp_path: Path) -> None:
    env = {**_store(tmp_path), "NEBULA_STATE_DIR": str(full_disk / "state")}
    shutil.copytree(tmp_path / "state", full_disk / "state")
    filler = full_disk / "filler"
    with filler.open("wb", buffering=0) as out, pytest.raises(OSError):  # until no byte is left
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    for args in (
        ["member", "add", "bob", "--role", "admin"],
        ["project", "set", "shop", "interval", "30"],
    ):
        _one_error(_nebula(env, *args), "the disk holding the state store is full: ")
    listed = _nebula(env, "member", "list", "--json")
    assert (listed.returncode, listed.stderr) == (0, "")
    assert '"alice"' in listed.stdout
    status = _nebula(env, "status", "shop", "--json")
    assert (status.returncode, status.stderr) == (0, "")


def _no_page_left(nebula: Nebula) -> None:
    """The store's file may not grow past the pages it has now: the next write that needs a
    page fails as on a full disk."""
    with nebula.ctx.db.reading() as session:
        pages = session.connection().exec_driver_sql("PRAGMA page_count").scalar()

    def no_room(connection: object, _record: object) -> None:
        connection.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[attr-defined]

    nebula.ctx.db.engine.dispose()
    event.listen(nebula.ctx.db.engine, "connect", no_room)


def test_a_full_database_in_process_is_one_line_and_reads_still_work(nebula: Nebula) -> None:
    nebula.ok("member add alice --role admin")
    _no_page_left(nebula)
    for n in range(200):  # until a page is needed
        result = nebula.cli("member", "add", f"m{n}-" + "x" * 90, "--role", "admin")
        if result.code != 0:
            break
    assert result.code == 1
    assert result.err.startswith("error: the disk holding the state store is full: "), result.err
    assert result.err.count("\n") == 2 and f"hint: free some space there; {READS}" in result.err
    assert "alice" in nebula.ok("member list").out


def test_a_full_database_fails_a_bare_connection_in_one_line(nebula: Nebula) -> None:
    """The simulated API's calls run on bare connections (``Database.begin``, statements
    built once): a store that fails one says so as the store's error, as a session does."""
    _no_page_left(nebula)
    now = nebula.ctx.clock.now()
    with pytest.raises(StoreError) as failed:
        for n in range(200):  # until a page is needed
            with nebula.ctx.db.begin() as conn:
                conn.execute(
                    insert(schema.ClusterObject).values(
                        namespace="shop-staging", kind="ConfigMap", name=f"c{n}",
                        body={"data": {"x": "y" * 900}}, created_at=now, updated_at=now,
                    )
                )  # fmt: skip
    assert str(failed.value).startswith("the disk holding the state store is full: ")
    assert "\n" not in str(failed.value)


def test_an_unreachable_database_stops_serve_in_one_line(tmp_path: Path) -> None:
    env = serve_env(tmp_path, database_url="postgresql+psycopg://nebula:pw@127.0.0.1:9/nebula")
    result = _nebula(env, "serve", "--port", "1")
    assert result.returncode == 1
    (line, hint) = result.stderr.splitlines()[-2:]
    assert line.startswith("error: the database cannot be reached: "), result.stderr
    assert hint.startswith("hint: check that the database server runs")
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
def test_a_database_restart_is_one_warning_in_the_log_not_a_traceback_per_tick(
    postgres_server: PostgresServer,
    fresh_postgres_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = bootstrap.open_context(
        settings.Settings(database_url=fresh_postgres_url, state_dir=tmp_path), git=False
    )
    scheduler = Scheduler(ctx, timings=Timings(tick=0.2, poll_check=0.2, expire=0.2, outbox=0.2))
    caplog.set_level(logging.INFO, logger="nebula")
    scheduler.start()
    try:
        time.sleep(1)
        postgres_server.stop("fast")
        time.sleep(3)  # every job fails, several times each
        postgres_server.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            "answers again" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.2)
    finally:
        scheduler.stop()
        postgres_server.ensure_running()
        ctx.db.dispose()
    store = [r for r in caplog.records if r.name == "nebula.scheduler"]
    failing = [r for r in store if "the state store is failing" in r.getMessage()]
    assert len(failing) == 1, [r.getMessage() for r in store]
    assert failing[0].levelno == logging.WARNING
    assert "the database cannot be reached" in failing[0].getMessage()
    assert [r.getMessage() for r in store if "answers again" in r.getMessage()] == [
        "the state store answers again"
    ]
    assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"


@pytest.mark.postgres
@pytest.mark.parametrize("idle_for_ping", [0.0, 3600.0])
def test_a_connection_the_server_closed_while_idle_is_replaced_before_use(
    postgres_server: PostgresServer,
    fresh_postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    idle_for_ping: float,
) -> None:
    """A pooled connection idle past ``PING_AFTER_IDLE`` is pinged when handed out (one in
    steady use is not: a round trip per transaction); the restart below cuts it. Pinged, the
    next unit of work gets a fresh one; not pinged, that unit of work fails once."""
    monkeypatch.setattr(database, "PING_AFTER_IDLE", idle_for_ping)
    db = database.Database(fresh_postgres_url)
    try:
        with db.begin() as conn:  # a pooled connection, idle from here
            conn.execute(select(1))
        postgres_server.restart("fast")
        if idle_for_ping:
            with pytest.raises(StoreError), db.begin() as conn:
                conn.execute(select(1))
        with db.begin() as conn:
            assert conn.execute(select(1)).scalar() == 1
    finally:
        db.dispose()
        postgres_server.ensure_running()


def test_a_writer_lease_of_a_dead_process_on_this_host_is_taken_at_once(nebula: Nebula) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    host = socket.gethostname()
    with nebula.ctx.db.transaction() as session:
        session.add(
            schema.Lease(
                name="server:sqlite",
                owner=f"{host}:{finished.pid}",
                expires_at=nebula.clock.now() + scheduling.WRITER_LEASE,
            )
        )
    assert scheduling.claim_writer(nebula.ctx, f"{host}:{os.getpid()}-new") is None
    with nebula.ctx.db.reading() as session:
        assert (
            leases.holder(session, nebula.clock, leases.SQLITE_WRITER)
            == f"{host}:{os.getpid()}-new"
        )


@pytest.mark.parametrize("holder", ["alive", "other-host", "named"])
def test_a_writer_lease_that_may_be_alive_is_waited_for(nebula: Nebula, holder: str) -> None:
    owner = {
        "alive": f"{socket.gethostname()}:{os.getpid()}",
        "other-host": "elsewhere.example:1",
        "named": "replica-a",
    }[holder]
    with nebula.ctx.db.transaction() as session:
        session.add(
            schema.Lease(
                name="server:sqlite",
                owner=owner,
                expires_at=nebula.clock.now() + scheduling.WRITER_LEASE,
            )
        )
    refused = scheduling.claim_writer(nebula.ctx, "newcomer:1")
    assert refused is not None and refused.startswith(f"Another Nebula server ({owner}) is running")


def test_a_server_killed_with_sigkill_restarts_at_once(tmp_path: Path) -> None:
    """Its writer lease names a process that no longer exists on this host: the next server
    takes it over instead of refusing to start for the lease's 20 s."""
    env = _store(tmp_path)
    first = ServeProcess(env, tmp_path / "first.log")
    first.start()
    assert first.process is not None
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait()
    second = ServeProcess(env, tmp_path / "second.log")
    try:
        second.start()  # raises if it exits ("Another Nebula server ... is running")
        assert "took over from a server that is gone" in second.logs()
    finally:
        second.kill()
