"""Events recorded together (``events.together``, how a tick records a batch): inserted as
the block ends, in the order recorded, with what each would have had on its own; none when
the block raises."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import event, select

from reconciler.clock import FakeClock
from reconciler.store import events, schema
from reconciler.store.database import Database
from reconciler.store.events import EventKind
from tests.store import rows

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _url(request: pytest.FixtureRequest, path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{path}"
    return str(request.getfixturevalue("fresh_postgres_url"))


@pytest.fixture(params=STORES)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    db = Database(_url(request, tmp_path / "nebula.db"))
    yield db
    db.dispose()


def _project(db: Database, clock: FakeClock) -> tuple[int, int]:
    with db.transaction() as session:
        project, env = rows.project_and_environment(session, clock)
        return project.id, env.id


def _timeline(db: Database) -> list[tuple[object, ...]]:
    with db.transaction() as session:
        rows = session.scalars(select(schema.Event).order_by(schema.Event.id))
        return [
            (e.kind, e.project_id, e.environment_id, e.state, e.message, e.actor, e.action,
             e.target)
            for e in rows
        ]  # fmt: skip


def _record(db: Database, clock: FakeClock, ids: tuple[int, int], together: bool) -> None:
    with db.transaction() as session:
        project = session.get_one(schema.Project, ids[0])
        env = session.get_one(schema.Environment, ids[1])
        with events.together(session) if together else nullcontext():
            project.blocker = "configuration"
            events.project_blocker(session, clock.now(), project, "nebula.toml: line 3")
            events.suspension(session, clock.now(), env, "suspended", actor="alice", suspended=True)
            project.blocker = None
            events.project_blocker(session, clock.now(), project, "cleared")


def _inserts(db: Database) -> list[str]:
    seen: list[str] = []
    event.listen(
        db.engine, "before_cursor_execute",
        lambda conn, cursor, sql, *_: seen.append(sql)
        if sql.startswith("INSERT INTO events") else None,
    )  # fmt: skip
    return seen


def test_events_recorded_together_are_the_events_recorded_one_by_one(db: Database) -> None:
    clock = FakeClock()
    ids = _project(db, clock)
    _record(db, clock, ids, together=False)
    alone = _timeline(db)
    inserts = _inserts(db)
    _record(db, clock, ids, together=True)

    assert _timeline(db) == alone + alone
    assert [row[:4] for row in alone] == [
        (EventKind.PROJECT_BLOCKER, 1, None, "configuration"),
        (EventKind.SUSPEND, 1, 1, "suspended"),
        (EventKind.PROJECT_BLOCKER, 1, None, None),
    ]
    assert alone[1][5:] == ("alice", "suspend", "shop/production")
    assert len(inserts) == 1


def test_a_block_within_another_adds_its_events_to_the_outer_one(db: Database) -> None:
    clock = FakeClock()
    ids = _project(db, clock)
    inserts = _inserts(db)
    with db.transaction() as session:
        project = session.get_one(schema.Project, ids[0])
        with events.together(session):
            events.project_blocker(session, clock.now(), project, "first")
            with events.together(session):
                events.project_blocker(session, clock.now(), project, "second")
            events.project_blocker(session, clock.now(), project, "third")
    assert [row[4] for row in _timeline(db)] == ["first", "second", "third"]
    assert len(inserts) == 1


def test_events_recorded_together_in_a_block_that_raises_are_not_stored(db: Database) -> None:
    clock = FakeClock()
    ids = _project(db, clock)
    with pytest.raises(RuntimeError), db.transaction() as session:
        project = session.get_one(schema.Project, ids[0])
        with events.together(session):
            events.project_blocker(session, clock.now(), project, "nebula.toml: line 3")
            raise RuntimeError("the replica dies while recording its batch")
    assert _timeline(db) == []
