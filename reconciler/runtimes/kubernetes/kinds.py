"""The kinds the watch cache keeps, per namespace: adding one is one line here.

A kind is listed and then watched in a namespace the first time something reads it there, and
only what Nebula's checks can need is kept, so memory follows what Nebula manages rather than
what the cluster holds:

- objects labelled ``app.kubernetes.io/managed-by=nebula``: everything Nebula applies, and the
  ReplicaSets and pods made from its pod templates, which carry the template's labels;
- of events, only ``type=Warning`` (events carry no labels of ours; only warnings explain a
  stuck rollout), and at most ``limit`` per namespace;
- pods, ReplicaSets and events without ``metadata.managedFields``: they are the many, and
  nothing asks who owns their fields. What Nebula applies keeps them (drift detection reads
  which fields are Nebula's).
"""

from __future__ import annotations

from dataclasses import dataclass

from renderers import naming

MANAGED = f"{naming.MANAGED_BY}=nebula"


@dataclass(frozen=True)
class Watched:
    group: str  # "" for the core group
    kind: str
    label_selector: str = MANAGED
    field_selector: str = ""
    trim: bool = False  # drop metadata.managedFields
    limit: int | None = None  # keep at most this many, dropping the least recently changed


KINDS: dict[str, Watched] = {
    watched.kind: watched
    for watched in (
        Watched("apps", "Deployment"),
        Watched("apps", "StatefulSet"),
        Watched("apps", "ReplicaSet", trim=True),
        Watched("", "Pod", trim=True),
        Watched("batch", "Job"),
        Watched("batch", "CronJob"),
        Watched("", "Service"),
        Watched("", "ConfigMap"),
        Watched("", "Secret"),
        Watched("", "PersistentVolumeClaim"),
        Watched(
            "", "Event", label_selector="", field_selector="type=Warning", trim=True, limit=1000
        ),
    )
}
