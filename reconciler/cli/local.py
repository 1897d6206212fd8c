"""Local mode: the API's acts run in this process, on the store itself, for whoever operates
Nebula's store (the server's machine, a CI job with the database's URL).

A command builds the same requests as it would for a server and sends them through the same
client (``client.http``); an httpx transport hands each one to the route the HTTP app would
run (``acts.routes``), as ``--as NAME`` or ``local-admin``, and answers as the app would:
the same documents, the same status codes and error bodies. So local and remote mode are one
path, and a test of one is a test of the other.

Loaded by name only in local mode, under ``cli.quick`` (which reads a status without it): it
brings the store and the engine.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from reconciler import bootstrap, wire
from reconciler.acts import calls, checking, routes
from reconciler.acts.calls import Call, Caller
from reconciler.cli import common, quick
from reconciler.client import http
from reconciler.context import Context
from reconciler.errors import NebulaError, StoreError
from reconciler.store import failures

_CONTEXT: dict[str, Context] = {}


def context(args: argparse.Namespace, *, git: bool = False) -> Context:
    """One context per process (the CLI runs one command), built from settings on first use."""
    key = f"git={git}"
    if key not in _CONTEXT:
        _CONTEXT[key] = bootstrap.open_context(common.load_settings(args), git=git)
    return _CONTEXT[key]


def use(ctx: Context) -> None:
    """Run commands against ``ctx`` (tests: a fake clock, a temporary database); the quick
    status read too."""
    _CONTEXT["git=True"] = ctx
    _CONTEXT["git=False"] = ctx
    quick.pin(ctx.db.path, ctx.clock)


def reset() -> None:
    """Forget the cached context and the warnings given (tests run several commands in one
    process)."""
    for ctx in {id(c): c for c in _CONTEXT.values()}.values():
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()
    _CONTEXT.clear()
    quick.unpin()
    common.forget_warnings()


def _answer(status: int, document: Any) -> http.Response:
    return http.Response(status, json=document)


class Transport(http.Transport):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def handle_request(self, request: http.Request) -> http.Response:
        found = routes.match(request.method, request.url.path)
        if found is None:
            message = f"Nothing at {request.url.path}"
            return _answer(404, wire.body(wire.NO_ROUTE, message))
        route, path = found
        body = json.loads(request.content) if request.content else {}
        query = dict(request.url.params)
        try:
            checking.check(route, path, query)  # as the server's validation would
            call = Call(
                context(self.args, git=route.git),
                Caller(local=True, as_name=getattr(self.args, "actor", None)),
                path=path,
                query=query,
                body=body,
            )
            return _answer(200, calls.run(route, call))
        except NebulaError as exc:
            return _answer(wire.status_of(exc), wire.body_of(exc))
        except SQLAlchemyError as exc:
            # The store failed outside a unit of work that says so itself: one line all the same.
            mapped = failures.store_error(exc) or StoreError(
                f"the state store failed: {failures.first_line(exc)}"
            )
            return _answer(wire.status_of(mapped), wire.body_of(mapped))
