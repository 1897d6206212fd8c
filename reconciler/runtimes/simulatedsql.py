"""The simulated API server's statements, built once at import: a statement object caches
its compiled form, so a call costs its round trips rather than building SQL each time.

Its objects are rows of ``simulated_objects`` keyed by (namespace, kind, name); namespace
``""`` also holds the control row that makes the API unreachable and the log of the calls
that changed something.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Integer,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.elements import ColumnElement

from reconciler.store import schema
from reconciler.store.schema import UTCDateTime

CONTROL = "simulation.nebula.dev/control"
LOG = "simulation.nebula.dev/log"

OBJECTS = _C = schema.ClusterObject


def key(namespace: Any, kind: Any, name: Any) -> ColumnElement[bool]:
    """One object, by the unique key its index is on."""
    return and_(_C.namespace == namespace, _C.kind == kind, _C.name == name)


CONTROL_KEY = key("", CONTROL, "unreachable")
REACHABLE = select(_C.id).where(CONTROL_KEY)
GET = select(_C.kind, _C.body, _C.created_at).where(
    or_(CONTROL_KEY, key(bindparam("ns"), bindparam("kind"), bindparam("name")))
)
# The kinds a stage's call reads by name (``_get``): in a batch, a namespace's objects of these
# kinds are read in one query, the first time a call of the batch reads one of them.
BY_NAME = ("Deployment", "StatefulSet", "Job", "Service")
NAMESPACE_BY_NAME = select(_C.kind, _C.name, _C.body, _C.created_at).where(
    or_(CONTROL_KEY, and_(_C.namespace == bindparam("ns"), _C.kind.in_(BY_NAME)))
)
IN_NAMESPACE = select(_C.kind, _C.name, _C.body).where(
    or_(_C.namespace == bindparam("ns"), CONTROL_KEY)
)
DELETE_KEY = delete(OBJECTS).where(key(bindparam("ns"), bindparam("kind"), bindparam("name")))
SECRETS = select(_C.namespace, _C.kind, _C.name, _C.body).where(
    _C.kind == "Secret", _C.name.in_(bindparam("names", expanding=True))
)


def _upsert(dialect: str) -> Any:
    """Server-side apply of objects: each created, or updated when the body differs (an
    identical apply changes nothing). Its RETURNING makes SQLAlchemy send the objects of an
    executemany as one multi-row INSERT ("insertmanyvalues"), not a statement per object:
    a third of the time for a batch's few hundred objects on PostgreSQL."""
    statement = (sqlite_insert if dialect == "sqlite" else pg_insert)(OBJECTS)
    return statement.on_conflict_do_update(
        index_elements=["namespace", "kind", "name"],
        set_={"body": statement.excluded.body, "updated_at": statement.excluded.updated_at},
        # (JSON has no equality on PostgreSQL: compared as the text it was written as)
        where=cast(_C.body, Text) != cast(statement.excluded.body, Text),
    ).returning(_C.id)


def _log_entry(dialect: str) -> Any:
    """Log an entry, numbered after the last one (an index lookup, not a count of the whole
    log) in the statement that inserts it; the suffix keeps two replicas numbering at once
    from colliding."""
    last = func.coalesce(cast(func.substr(func.max(_C.name), 1, 9), Integer) + 1, 0)
    if dialect == "sqlite":
        number = func.printf("%09d", last)
    else:
        number = func.lpad(cast(last, Text), 9, "0")
    now = bindparam("now", type_=UTCDateTime())
    body = bindparam("body", type_=JSON())
    numbered = select(
        literal(""), literal(LOG), number + bindparam("suffix", type_=Text()), body, now, now
    ).where(_C.namespace == "", _C.kind == LOG)
    columns = ["namespace", "kind", "name", "body", "created_at", "updated_at"]
    return insert(OBJECTS).from_select(columns, numbered)


UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}
LOG_ENTRY = {dialect: _log_entry(dialect) for dialect in ("sqlite", "postgresql")}
