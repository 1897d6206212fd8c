"""Wiring: settings -> a ``Context`` with the database, the vault and the git cache."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from reconciler.admin import repourls
from reconciler.clock import Clock, SystemClock
from reconciler.context import Context
from reconciler.lazy import Part
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from reconciler.store.crypto import open_vault
from reconciler.store.database import Database

if TYPE_CHECKING:
    from reconciler.gitsource.cache import GitCache

# Only a process that polls opens the git cache (pygit2, libgit2): loaded then.
GIT_CACHE = Part("reconciler.gitsource.opening", "open_cache")


def open_context(settings: Settings, clock: Clock | None = None, *, git: bool = True) -> Context:
    db = Database(settings.resolved_database_url)
    vault = open_vault(settings.secret_key, settings.state_dir)
    try:
        repourls.seal_credentials(db, vault)
    except Exception as exc:  # a read-only store: it is tried again on the next start
        logging.getLogger("nebula").warning(
            "could not encrypt the credentials of repository URLs", extra={"reason": str(exc)}
        )
    cache = None
    if git:
        open_cache: Callable[[Settings], GitCache] = GIT_CACHE.get()
        cache = open_cache(settings)
    clock = clock or SystemClock()
    return Context(
        db=db,
        clock=clock,
        settings=settings,
        vault=vault,
        clusters=Clusters(settings, db, clock, vault),
        git=cache,
    )


def settle() -> None:
    """A process that runs until it is stopped (``nebula serve``), started: what it loaded
    (modules, templates, its context) is collected of garbage once, then moved out of the
    cyclic collector's view (``gc.freeze``). Kept for the process's life, those objects
    (about 150,000) were scanned again by every full collection: 75 ms each, a sixth of a
    busy replica's time in ``bench/throughput.py``. Not for short-lived commands or tests:
    nothing frozen is ever collected."""
    gc.collect()
    gc.freeze()
