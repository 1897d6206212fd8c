"""NEBULA_KUBE_NAMESPACE_ROLE and NEBULA_KUBE_SERVICE_ACCOUNT: the RoleBinding Nebula writes in
each namespace it creates (on the API server: tests/e2e_kube/test_own_deployment.py)."""

from __future__ import annotations

import pytest

from reconciler.errors import ConfigurationError
from reconciler.runtimes.kubernetes import binding


def test_without_a_role_nothing_is_bound() -> None:
    assert binding.parse("", "") is None
    assert binding.parse("", "nebula/nebula") is None


def test_the_role_is_bound_to_the_service_account_in_the_namespace() -> None:
    role = binding.parse("nebula-namespace", "nebula/nebula")
    assert role is not None

    assert role.manifest("shop-staging") == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": "nebula",
            "namespace": "shop-staging",
            "labels": {"app.kubernetes.io/managed-by": "nebula"},
        },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "nebula-namespace",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "nebula", "namespace": "nebula"}],
    }


@pytest.mark.parametrize("account", ["", "nebula", "nebula/", "/nebula", "a/b/c"])
def test_a_role_without_a_service_account_is_a_configuration_error(account: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        binding.parse("nebula-namespace", account)

    assert raised.value.message == (
        f"NEBULA_KUBE_NAMESPACE_ROLE is 'nebula-namespace', but NEBULA_KUBE_SERVICE_ACCOUNT "
        f"{account!r} is not NAMESPACE/NAME"
    )
    assert raised.value.hint == (
        "set NEBULA_KUBE_SERVICE_ACCOUNT to the ServiceAccount Nebula runs as, e.g. nebula/nebula"
    )
