"""The one comparison both runtimes' live objects go through: what is drift and what is not,
the paths it names, the unified diff, and that a Secret's values never show."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.core import drifts, fieldpaths
from reconciler.core.drifts import Drift

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "api-r3",
        "namespace": "shop-production",
        "labels": {"app.kubernetes.io/managed-by": "nebula", "nebula.dev/release": "r-3"},
    },
    "spec": {
        "replicas": 2,
        "minReadySeconds": 0,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "reg/api@sha256:aaa",
                        "command": ["bin/serve"],
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "envFrom": [{"configMapRef": {"name": "api-r3-vars"}}],
                        "env": [{"name": "MODE", "value": "web"}],
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "1Gi"},
                            "limits": {"memory": "1Gi"},
                        },
                    }
                ]
            }
        },
    },
}


def live(**changes: Any) -> dict[str, Any]:
    """The Deployment as an API server returns it: defaults, status, other managers' fields."""
    obj = copy.deepcopy(DEPLOYMENT)
    obj["metadata"]["uid"] = "1234"
    obj["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    obj["metadata"]["managedFields"] = [{"manager": "nebula", "operation": "Apply"}]
    del obj["spec"]["minReadySeconds"]  # 0 is stored as nothing
    spec = obj["spec"]
    spec["strategy"] = {"type": "RollingUpdate"}
    container = spec["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"
    container["resources"]["requests"]["cpu"] = "0.5"
    container["resources"]["limits"]["memory"] = "1024Mi"
    obj["status"] = {"replicas": 2, "readyReplicas": 2}
    for path, value in changes.items():
        obj = fieldpaths.put(obj, fieldpaths.read(path.replace("__", ".")), value)
    return obj


def test_what_the_api_server_adds_or_respells_is_not_drift() -> None:
    assert drifts.compare(DEPLOYMENT, live()) == ()


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.replicas", 5, Drift("Deployment/api-r3", "spec.replicas", "5", "2")),
        (
            "spec.template.spec.containers[name=web].image",
            "reg/api@sha256:bbb",
            Drift(
                "Deployment/api-r3",
                "spec.template.spec.containers[name=web].image",
                "reg/api@sha256:bbb",
                "reg/api@sha256:aaa",
            ),
        ),
        (
            "spec.template.spec.containers[name=web].env[name=MODE].value",
            "worker",
            Drift(
                "Deployment/api-r3",
                "spec.template.spec.containers[name=web].env[name=MODE].value",
                "worker",
                "web",
            ),
        ),
        (
            'metadata.labels["nebula.dev/release"]',
            "r-9",
            Drift("Deployment/api-r3", 'metadata.labels["nebula.dev/release"]', "r-9", "r-3"),
        ),
        (
            "spec.template.spec.containers[name=web].resources.requests.cpu",
            "250m",
            Drift(
                "Deployment/api-r3",
                "spec.template.spec.containers[name=web].resources.requests.cpu",
                "250m",
                "500m",
            ),
        ),
        (
            "spec.template.spec.containers[name=web].command",
            ["bin/other"],
            Drift(
                "Deployment/api-r3",
                "spec.template.spec.containers[name=web].command",
                '["bin/other"]',
                '["bin/serve"]',
            ),
        ),
        ("spec.minReadySeconds", 30, Drift("Deployment/api-r3", "spec.minReadySeconds", "30", "0")),
    ],
)
def test_a_field_nebula_sets_with_another_value_is_drift(
    path: str, value: Any, expected: Drift
) -> None:
    changed = fieldpaths.put(live(), fieldpaths.read(path), value)
    assert drifts.compare(DEPLOYMENT, changed) == (expected,)


def test_fields_and_list_entries_other_managers_add_are_not_drift() -> None:
    changed = live()
    changed["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "now"
    changed["metadata"]["labels"]["team"] = "payments"
    container = changed["spec"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "DEBUG", "value": "1"})
    changed["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "x"})
    assert drifts.compare(DEPLOYMENT, changed) == ()


def test_an_entry_or_field_removed_is_drift_and_a_gone_object_is_missing() -> None:
    changed = live()
    changed["spec"]["template"]["spec"]["containers"][0]["env"] = []
    del changed["spec"]["replicas"]
    assert drifts.compare(DEPLOYMENT, changed) == (
        Drift("Deployment/api-r3", "spec.replicas", None, "2"),
        Drift(
            "Deployment/api-r3",
            "spec.template.spec.containers[name=web].env[name=MODE]",
            None,
            '{"name":"MODE","value":"web"}',
        ),
    )
    assert drifts.compare(DEPLOYMENT, None) == (Drift("Deployment/api-r3", missing=True),)
    deleting = live()
    deleting["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    assert drifts.compare(DEPLOYMENT, deleting)[0].missing


def test_the_json_shapes_of_the_contract() -> None:
    assert Drift("Deployment/api-r3", "spec.replicas", "5", "2").to_json() == {
        "object": "Deployment/api-r3",
        "path": "spec.replicas",
        "live": "5",
        "desired": "2",
    }
    assert Drift("Service/api", missing=True).to_json() == {
        "object": "Service/api",
        "missing": True,
    }
    for drift in (Drift("Service/api", missing=True), Drift("ConfigMap/x", "data.K", None, "v")):
        assert Drift.from_json(drift.to_json()) == drift


@pytest.mark.parametrize(
    ("text", "quantity"),
    [("500m", "0.5"), ("0.5", "0.5"), ("1Gi", "1073741824"), ("1024Mi", "1073741824"), ("2", "2")],
)
def test_quantities_compare_by_amount(text: str, quantity: str) -> None:
    assert drifts.quantity(text) == drifts.quantity(quantity)


@pytest.mark.parametrize(
    "path",
    [
        "spec.replicas",
        "data.LOG_LEVEL",
        "spec.template.spec.containers[name=web].env[name=MODE].value",
        'metadata.labels["nebula.dev/release"]',
        "spec.volumeClaimTemplates[0].spec",
    ],
)
def test_paths_read_back_as_written(path: str) -> None:
    assert fieldpaths.text(fieldpaths.read(path)) == path


def test_a_bracketed_key_may_go_without_its_quotes() -> None:
    assert fieldpaths.read("metadata.labels[example.com/owner]") == [
        "metadata",
        "labels",
        "example.com/owner",
    ]


@pytest.mark.parametrize("path", ["", ".spec", "spec..replicas", "spec[", "spec[x"])
def test_a_malformed_path_is_refused(path: str) -> None:
    with pytest.raises(ValueError):
        fieldpaths.read(path)


SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db-credentials", "labels": {"nebula.dev/service": "db"}},
    "type": "Opaque",
    "data": {"password": "c2VjcmV0LXZhbHVl"},
}


def test_a_secret_says_which_key_differs_never_a_value() -> None:
    changed = fieldpaths.put(SECRET, ["data", "password"], "b3RoZXI=")
    found = drifts.compare(SECRET, changed)
    assert found == (
        Drift("Secret/db-credentials", "data.password", "(hidden, differs)", "(hidden)"),
    )
    gone = fieldpaths.put(SECRET, ["data"], {})
    assert drifts.compare(SECRET, gone) == (
        Drift("Secret/db-credentials", "data.password", None, "(hidden)"),
    )
    text = drifts.unified(SECRET, changed, "r-1")
    assert "c2VjcmV0" not in text and "b3RoZXI" not in text
    assert "-  password: (hidden, differs)\n+  password: (hidden)\n" in text


def test_the_unified_diff_shows_only_what_drifted() -> None:
    assert drifts.unified(DEPLOYMENT, live(), "r-3") == ""
    text = drifts.unified(DEPLOYMENT, live(spec__replicas=5), "r-3")
    assert text.startswith("--- live/Deployment/api-r3\n+++ r-3/Deployment/api-r3\n")
    assert [
        line for line in text.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")
    ] == [
        "-  replicas: 5",
        "+  replicas: 2",
    ]
    missing = drifts.unified(DEPLOYMENT, None, "r-3")
    assert missing.startswith("--- live/Deployment/api-r3\n+++ r-3/Deployment/api-r3\n@@ -0,0 +1,")
