"""Wiring: settings -> a ``Context`` with the database, the vault and the git cache."""

from __future__ import annotations

import gc
import logging
from pathlib import Path

from reconciler.admin import projects
from reconciler.clock import Clock, SystemClock
from reconciler.context import Context
from reconciler.gitsource.cache import GitCache
from reconciler.gitsource.credentials import GitCredentials, SshKey
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from reconciler.store.crypto import open_vault
from reconciler.store.database import Database


def open_context(settings: Settings, clock: Clock | None = None, *, git: bool = True) -> Context:
    db = Database(settings.resolved_database_url)
    vault = open_vault(settings.secret_key, settings.state_dir)
    try:
        projects.seal_credentials(db, vault)
    except Exception as exc:  # a read-only store: it is tried again on the next start
        logging.getLogger("nebula").warning(
            "could not encrypt the credentials of repository URLs", extra={"reason": str(exc)}
        )
    cache = None
    if git:
        cache = GitCache(
            settings.resolved_git_cache_dir,
            credentials=GitCredentials.parse(
                settings.git_credentials,
                ssh_key=SshKey(
                    Path(settings.git_ssh_key), passphrase=settings.git_ssh_key_passphrase
                )
                if settings.git_ssh_key
                else None,
            ),
        )
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
