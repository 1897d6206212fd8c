"""``nebula simulated edit|delete``: a live object of the simulated cluster changed behind
Nebula's back, as a person with kubectl would, so that the demo and the tests can drift one.
A test and demo aid, like the simulated cluster itself; the CLI refuses it on a real cluster.
"""

from __future__ import annotations

from reconciler.core import fieldpaths
from reconciler.errors import NotFoundError
from reconciler.runtimes.cluster import Manifest
from reconciler.runtimes.simulatedapi import SimulatedApi


def edit(cluster: SimulatedApi, namespace: str, ref: str, path: str, value: object) -> Manifest:
    """``value`` at ``path`` (``spec.replicas``, ``data.LOG_LEVEL``,
    ``spec.template.spec.containers[name=web].image``) of ``ref`` (``Kind/name``)."""
    kind, name = _split(ref)
    try:
        segments = fieldpaths.read(path)
    except ValueError as exc:
        raise NotFoundError(str(exc), hint="e.g. spec.replicas or data.LOG_LEVEL") from None

    def change(body: Manifest) -> Manifest:
        try:
            return fieldpaths.put(body, segments, value)
        except KeyError as exc:
            raise NotFoundError(f"{ref} in {namespace} has no {exc.args[0]}") from None

    changed = cluster.change(namespace, kind, name, change)
    if changed is None:
        raise NotFoundError(f"No {ref} in {namespace} on the simulated cluster")
    return changed


def delete(cluster: SimulatedApi, namespace: str, ref: str) -> None:
    kind, name = _split(ref)
    if not cluster.delete(namespace, kind, name):
        raise NotFoundError(f"No {ref} in {namespace} on the simulated cluster")


def _split(ref: str) -> tuple[str, str]:
    kind, _, name = ref.partition("/")
    if not kind or not name:
        raise NotFoundError(
            f"{ref!r} names no object", hint="write KIND/NAME, e.g. Deployment/api-r1"
        )
    return kind, name
