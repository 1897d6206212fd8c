"""Nebula's rights in the namespaces it creates: a RoleBinding of one ClusterRole to itself.

deploy/kubernetes grants Nebula nothing namespaced cluster-wide: no Secret outside its own
namespaces is readable. What it may do inside a ``<project>-<env>`` namespace is a ClusterRole
(``nebula-namespace``) that Nebula binds there itself, with a RoleBinding it applies right
after the Namespace (it holds ``bind`` on that one ClusterRole, and may create RoleBindings).
A namespace an administrator made (Nebula refused the Namespace itself) gets no binding from
Nebula: whoever made it grants what Nebula may do there.

RBAC takes effect in the API server a moment after a binding is written, so the first time in
this process a namespace is bound, Nebula asks the API server (a SelfSubjectAccessReview,
allowed to everyone) until its rights are there, rather than failing the next apply with 403.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from reconciler.core.states import Blocker
from reconciler.errors import ConfigurationError, TransientError
from reconciler.runtimes.cluster import Manifest
from reconciler.runtimes.kubernetes.applying import Applier
from reconciler.runtimes.kubernetes.transport import Transport
from renderers import naming

NAME = "nebula"  # the RoleBinding's name in each namespace
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
EFFECTIVE_WITHIN = 10.0  # seconds a new binding may take to be in force
POLL = 0.05


@dataclass(frozen=True)
class NamespaceRole:
    """The ClusterRole bound in each namespace Nebula creates, and to whom."""

    role: str
    account_namespace: str
    account: str

    def manifest(self, namespace: str) -> Manifest:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": NAME,
                "namespace": namespace,
                "labels": {naming.MANAGED_BY: "nebula"},
            },
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": self.role,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": self.account,
                    "namespace": self.account_namespace,
                }
            ],
        }


def parse(role: str, account: str) -> NamespaceRole | None:
    """From NEBULA_KUBE_NAMESPACE_ROLE and NEBULA_KUBE_SERVICE_ACCOUNT; None without a role."""
    if not role:
        return None
    namespace, _, name = account.partition("/")
    if not namespace or not name or "/" in name:
        raise ConfigurationError(
            f"NEBULA_KUBE_NAMESPACE_ROLE is {role!r}, but NEBULA_KUBE_SERVICE_ACCOUNT "
            f"{account!r} is not NAMESPACE/NAME",
            hint="set NEBULA_KUBE_SERVICE_ACCOUNT to the ServiceAccount Nebula runs as, "
            "e.g. nebula/nebula",
        )
    return NamespaceRole(role, namespace, name)


class Binder:
    """Binds the role in a namespace; remembers the namespaces whose rights are in force."""

    def __init__(
        self,
        role: NamespaceRole,
        applier: Applier,
        transport: Transport,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.role = role
        self._applier = applier
        self._transport = transport
        self._monotonic = monotonic
        self._sleep = sleep
        self._in_force: set[str] = set()

    def bind(self, namespace: str) -> None:
        self._applier.apply(self.role.manifest(namespace), blocker=Blocker.CONFIGURATION)
        if namespace in self._in_force:
            return
        deadline = self._monotonic() + EFFECTIVE_WITHIN
        while not self._allowed(namespace):
            if self._monotonic() > deadline:
                raise TransientError(
                    f"the RoleBinding {NAME} to ClusterRole {self.role.role} in {namespace} "
                    f"is not in force after {EFFECTIVE_WITHIN:.0f}s"
                )
            self._sleep(POLL)
        self._in_force.add(namespace)

    def _allowed(self, namespace: str) -> bool:
        """Whether Nebula may now apply a ConfigMap there: what every release does first."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "namespace": namespace,
                    "verb": "patch",
                    "resource": "configmaps",
                }
            },
        }
        answer = self._transport.call(
            "POST",
            REVIEWS,
            what=f"check Nebula's rights in {namespace}",
            body=review,
        )
        return bool(((answer or {}).get("status") or {}).get("allowed"))
