"""The throwaway PostgreSQL server: reachable through SQLAlchemy + psycopg 3, one fresh
database per test, and restartable mid-run like the chaos suite needs."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.infra.postgres import PostgresServer

pytestmark = pytest.mark.postgres


def test_sqlalchemy_connects_with_psycopg(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            user = conn.execute(sa.text("select current_user")).scalar_one()
            version = conn.execute(sa.text("show server_version_num")).scalar_one()
        assert engine.dialect.driver == "psycopg"
        assert user == "nebula"
        assert int(version) >= 150000
    finally:
        engine.dispose()


def test_fresh_databases_do_not_share_rows(
    fresh_postgres_url: str, postgres_server: PostgresServer
) -> None:
    other_url = postgres_server.create_database("test_other_fresh")
    fresh, other = sa.create_engine(fresh_postgres_url), sa.create_engine(other_url)
    try:
        with fresh.begin() as conn:
            tables = conn.execute(
                sa.text(
                    "select count(*) from information_schema.tables where table_schema = 'public'"
                )
            ).scalar_one()
            conn.execute(sa.text("create table notes (body text)"))
            conn.execute(sa.text("insert into notes values ('only here')"))
        with other.connect() as conn:
            visible = conn.execute(sa.text("select to_regclass('public.notes')")).scalar_one()
        assert tables == 0
        assert visible is None
    finally:
        fresh.dispose()
        other.dispose()
        postgres_server.drop_database("test_other_fresh")


def test_restart_cuts_open_connections_and_keeps_data(
    fresh_postgres_url: str, postgres_server: PostgresServer
) -> None:
    engine = sa.create_engine(fresh_postgres_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("create table marks (n int)"))
            conn.execute(sa.text("insert into marks values (7)"))
        held = engine.connect()
        postgres_server.restart()
        with pytest.raises(sa.exc.OperationalError):
            held.execute(sa.text("select 1"))
        held.close()
        engine.dispose()  # the pool's other connections died with the old server too
        with engine.connect() as conn:
            assert conn.execute(sa.text("select n from marks")).scalar_one() == 7
    finally:
        engine.dispose()
