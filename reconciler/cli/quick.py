"""Local mode's transport: the status (``nebula status``, ``status --watch``, ``wait``) read
straight from a SQLite store, everything else handed to the API's acts (``cli.local``),
loaded only when a request needs them.

Reading a status is what people do most, and the acts bring SQLAlchemy, whose import alone
costs five times a ``kubectl version``. ``statusreads`` makes the same document from plain
``sqlite3``; whatever it does not answer (PostgreSQL, another schema revision, a name not
found, ``--as``, parameters that do not validate) goes to the acts, which answer as they
always have. The commands still speak through the one client (``client.http``): only the
transport under it differs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from reconciler import statusreads
from reconciler.acts import checking, routes
from reconciler.cli import common
from reconciler.client import http
from reconciler.client.http import Api
from reconciler.clock import Clock, SystemClock
from reconciler.errors import NebulaError
from reconciler.lazy import Part
from reconciler.store.sqlitereads import sqlite_path

FULL = Part("reconciler.cli.local", "Transport")  # the API's acts, in this process
STATUS_ACT = "reconciler.acts.reading:status"


@dataclass(frozen=True)
class Store:
    """Where a status is read from and what time it is there."""

    path: Path | None  # None: not a SQLite file (the acts read it)
    clock: Clock


_PINNED: list[Store] = []  # a context a test gave ``cli.local.use``: its store and its clock


def pin(path: Path | None, clock: Clock) -> None:
    """Read ``path`` at ``clock``'s time, whatever the settings say (``cli.local.use``)."""
    _PINNED[:] = [Store(path, clock)]


def unpin() -> None:
    _PINNED.clear()


class Transport(http.Transport):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._full: http.Transport | None = None
        self._where: Store | None = None  # read from the settings once (status --watch reads again)

    def handle_request(self, request: http.Request) -> http.Response:
        if request.method == "GET":
            answer = self._status(request)
            if answer is not None:
                return answer
        if self._full is None:
            self._full = FULL.get()(self.args)
        return self._full.handle_request(request)

    def close(self) -> None:
        if self._full is not None:
            self._full.close()

    def _status(self, request: http.Request) -> http.Response | None:
        if getattr(self.args, "actor", None) is not None:
            return None  # the acts check who --as names
        found = routes.match(request.method, request.url.path)
        if found is None or found[0].act != STATUS_ACT:
            return None
        route, path = found
        query = dict(request.url.params)
        try:
            checking.check(route, path, query)
        except NebulaError:
            return None  # the acts refuse it in the same words
        store = self._located()
        if store.path is None:
            return None
        document = statusreads.status(
            store.path,
            query.get("project") or path.get("slug") or None,
            query.get("env") or None,
            store.clock.now(),
        )
        return None if document is None else http.Response(200, json=document)

    def _located(self) -> Store:
        if _PINNED:
            return _PINNED[0]
        if self._where is None:
            self._where = self._store()
        return self._where

    def _store(self) -> Store:
        try:
            url = common.load_settings(self.args).resolved_database_url
        except NebulaError:
            return Store(None, SystemClock())  # the acts say what is wrong with the settings
        return Store(sqlite_path(url), SystemClock())


def connect(args: argparse.Namespace) -> Api:
    return http.in_process(Transport(args))
