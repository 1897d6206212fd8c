"""What every flow needs from the outside world, passed in rather than reached for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.clock import Clock
from reconciler.settings import Settings
from reconciler.store.crypto import Vault
from reconciler.store.database import Database

if TYPE_CHECKING:
    from reconciler.gitsource.cache import GitCache


@dataclass
class Context:
    db: Database
    clock: Clock
    settings: Settings
    vault: Vault
    git: GitCache | None = None
    clusters: Any = None  # reconciler.runtimes.registry.Clusters, set by the engine's callers
    extras: dict[str, Any] = field(default_factory=dict)
