"""``nebula serve``: one process with the web app (uvicorn) and the scheduler.

Shutdown on SIGTERM or SIGINT: uvicorn stops accepting connections and gives open ones
``GRACE`` seconds; the scheduler stops starting work at once, lets the step in progress
finish (its deployment's lease is released by the tick itself) and releases the replica's
poll and timer leases; the process exits 0 within ``EXIT_WITHIN`` seconds. Work that would
take longer is abandoned: its leases expire, and another replica (or this one, restarted)
resumes from the stage marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from types import FrameType
from urllib.parse import unquote, urlsplit

import h11
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from reconciler import bootstrap, logs, scheduling
from reconciler.gitsource.credentials import GitCredentials
from reconciler.settings import TABLE, Settings, Unknown
from reconciler.web.app import create_app
from reconciler.web.metrics import Metrics

log = logging.getLogger("nebula.serve")

GRACE = 2.0  # seconds for open HTTP connections
EXIT_WITHIN = 10.0
HEADER_TIMEOUT = 10.0  # seconds a request's headers may take to arrive
M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
MALLOC_ARENAS = 2


def secrets_of(settings: Settings) -> list[str]:
    """Every secret value the settings hold, so the logs can never print one: each setting
    marked secret, the tokens in the git credentials and the database URL's password."""
    values = [str(getattr(settings, spec.name)) for spec in TABLE if spec.secret]
    # A malformed value is reported by bootstrap, not here (and the whole value is in already).
    with contextlib.suppress(Exception):
        values += GitCredentials.parse(settings.git_credentials).secrets()
    try:
        password = urlsplit(settings.database_url).password or ""
    except ValueError:  # not a URL: bootstrap says so, and the whole value is in already
        password = ""
    values += [password, unquote(password)]
    return [v for v in dict.fromkeys(values) if v]


class _Server(uvicorn.Server):
    """Tells the scheduler to stop at the signal, not after the connections have closed."""

    def __init__(self, config: uvicorn.Config, scheduler: scheduling.Scheduler) -> None:
        super().__init__(config)
        self.scheduler = scheduler
        self.signalled_at: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.signalled_at is None:
            self.signalled_at = time.monotonic()
            self.scheduler.begin_stop()
            _watchdog(EXIT_WITHIN)
        super().handle_exit(sig, frame)


def protocol(header_timeout: float = HEADER_TIMEOUT) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's headers: a connection
    whose headers have not all arrived ``header_timeout`` seconds after it opened (or after
    its previous answer) is closed. uvicorn has none, so 50 connections sending a header a
    byte at a time held 50 connections for as long as they liked."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the headers are in
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._arm()  # the next request's headers, on a kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                log.info(
                    "closed a connection whose headers took too long",
                    extra={"client": self.client, "seconds": header_timeout},
                )
                self.transport.close()

    return HeaderDeadline


def config(
    app: FastAPI, host: str, port: int, *, header_timeout: float = HEADER_TIMEOUT
) -> uvicorn.Config:
    """How ``nebula serve`` runs the app (tests run the same in a thread)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol(header_timeout),
        ws="none",
        log_config=None,
        access_log=True,
        lifespan="on",
        server_header=False,
        timeout_graceful_shutdown=int(GRACE),
    )


def _watchdog(seconds: float) -> None:
    """Exit anyway once ``seconds`` have passed since the signal: a hung call must not keep
    a pod terminating until Kubernetes kills it."""

    def expire() -> None:
        time.sleep(seconds)
        log.error("shutdown took too long; exiting now", extra={"seconds": seconds})
        logging.shutdown()
        os._exit(1)

    threading.Thread(target=expire, name="nebula-shutdown-watchdog", daemon=True).start()


def fewer_malloc_arenas(environ: Mapping[str, str] | None = None) -> bool:
    """Caps glibc's malloc at ``MALLOC_ARENAS`` arenas; True when it did.

    glibc gives threads that allocate at once arenas of their own (up to eight per core), and
    each keeps what was freed in it: with the scheduler's and the tick's worker threads that is
    about 14 MB of a server's memory (bench/latency.py, 1,000 projects: 199 MB, 185 MB with
    two arenas). The threads mostly wait on I/O, so two arenas cost no measurable time. An
    operator's own ``MALLOC_ARENA_MAX`` (glibc's variable, read by the C library at start)
    is left alone; so is a C library without ``mallopt`` (musl, macOS).
    """
    env = os.environ if environ is None else environ
    if env.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, MALLOC_ARENAS))


def serve_and_exit(settings: Settings, **options: object) -> int:
    """``serve``, then the process ends at once: everything is closed by then, and skipping
    the interpreter's teardown (seconds of garbage collection on a busy node) keeps a stop
    within Kubernetes' grace period."""
    code = serve(settings, **options)  # type: ignore[arg-type]
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve(
    settings: Settings,
    *,
    unknown: Sequence[Unknown] = (),
    host: str = "127.0.0.1",
    port: int = 8080,
    log_level: str = "info",
    json_logs: bool | None = None,
) -> int:
    fewer_malloc_arenas()  # before any worker thread exists
    logs.configure(level=log_level, json_lines=json_logs, secrets=secrets_of(settings))
    for each in unknown:  # the CLI printed them; the logs keep them too
        log.warning(each.message, extra={"setting": each.variable, "hint": each.hint})
    ctx = bootstrap.open_context(settings)
    metrics = Metrics(ctx)
    scheduler = scheduling.Scheduler(ctx, observer=metrics, workers=settings.workers)
    refused = scheduling.claim_writer(ctx, scheduler.owner)
    if refused is not None:
        log.error("not starting", extra={"reason": refused})
        sys.stderr.write(f"error: {refused}\n")
        ctx.db.dispose()
        return 1
    app = create_app(ctx, scheduler=scheduler, metrics=metrics)
    server = _Server(config(app, host, port), scheduler)
    bootstrap.settle()
    # uvicorn re-raises the signal it caught once it has shut down; with these handlers in
    # place that ends the process through our cleanup below rather than by the signal.
    previous = {sig: signal.signal(sig, _remember) for sig in (signal.SIGTERM, signal.SIGINT)}
    log.info(
        "serving",
        extra={
            "url": f"http://{host}:{port}",
            "cluster": settings.cluster,
            "database": "sqlite" if ctx.db.is_sqlite else "postgresql",
        },
    )
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if ctx.clusters is not None:
            ctx.clusters.close()
        ctx.db.dispose()
        if ctx.git is not None:
            ctx.git.close()
    if server.signalled_at is not None:
        log.info(
            "stopped",
            extra={"seconds": round(time.monotonic() - server.signalled_at, 2)},
        )
    if not server.started and server.signalled_at is None:
        return 1  # could not bind the port (uvicorn logged why)
    return 0


def _remember(sig: int, frame: FrameType | None) -> None:
    """Once uvicorn has handled the signal, its re-raise lands here and does nothing."""
