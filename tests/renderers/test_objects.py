"""Every object kind a project renders: names, labels, contents, and the Kubernetes schemas."""

from __future__ import annotations

import pytest

from reconciler.errors import ConfigurationError
from reconciler.model.specs import InstanceSize
from renderers import capabilities, schemas
from renderers.capabilities import Capabilities
from renderers.rendering import Renderer
from tests.renderers import samples
from tests.renderers.samples import container, find

MANAGED = {
    "app.kubernetes.io/managed-by": "nebula",
    "nebula.dev/project": "shop",
    "nebula.dev/environment": "staging",
}


def test_a_project_renders_every_object_kind_in_apply_order() -> None:
    rendered = samples.render_project()

    assert [m.ref for m in rendered] == [
        "Namespace/shop-staging",
        "Secret/nebula-secrets",
        "Secret/db-credentials",
        "Service/db",
        "StatefulSet/db",
        "ConfigMap/search-r1-vars",
        "Deployment/search-r1",
        "Service/search-r1",
        "Service/search",
        "PersistentVolumeClaim/api-data",
        "ConfigMap/api-r1-vars",
        "Job/api-r1-release",
        "Deployment/api-r1",
        "PodDisruptionBudget/api-r1",
        "Deployment/api-r1-worker",
        "CronJob/api-r1-nightly",
        "Job/api-r1-backfill",
        "Service/api-r1",
        "Service/api",
    ]
    assert {m.namespace for m in rendered[1:]} == {"shop-staging"}
    assert rendered[0].namespace is None


@pytest.mark.parametrize(
    "caps", [capabilities.RECENT, capabilities.KUBERNETES_1_20], ids=["latest", "1.20"]
)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(caps: Capabilities) -> None:
    rendered = samples.render_project(caps=caps)

    result = schemas.validate(rendered, caps)

    assert result.schema_version == schemas.schema_version(caps)


def test_cronjobs_use_batch_v1_where_the_cluster_serves_it() -> None:
    recent = find(samples.render_project(caps=capabilities.RECENT), "CronJob", "api-r1-nightly")
    old = find(
        samples.render_project(caps=capabilities.KUBERNETES_1_20), "CronJob", "api-r1-nightly"
    )

    assert recent.api_version == "batch/v1"
    assert old.api_version == "batch/v1beta1"
    assert {k: v for k, v in old.body.items() if k != "apiVersion"} == {
        k: v for k, v in recent.body.items() if k != "apiVersion"
    }


def test_the_1_20_preset_is_checked_against_the_oldest_carried_schemas_and_says_so() -> None:
    result = schemas.validate(
        samples.render_project(caps=capabilities.KUBERNETES_1_20), capabilities.KUBERNETES_1_20
    )

    assert result.schema_version == schemas.carried_versions()[0]
    assert result.stand_ins == (
        "policy/v1beta1 PodDisruptionBudget checked as policy/v1",
        "batch/v1beta1 CronJob checked as batch/v1",
    )


def test_labels_on_every_object() -> None:
    rendered = samples.render_project()

    for manifest in rendered:
        labels = manifest.body["metadata"]["labels"]
        assert {k: labels[k] for k in MANAGED} == MANAGED, manifest.ref
    per_release = [m for m in rendered if m.name.startswith("api-r1")]
    assert per_release
    for manifest in per_release:
        assert manifest.body["metadata"]["labels"]["nebula.dev/service"] == "api"
        assert manifest.body["metadata"]["labels"]["nebula.dev/release"] == "r-1", manifest.ref
    for name in ("api", "api-data"):
        manifest = next(m for m in rendered if m.name == name)
        assert "nebula.dev/release" not in manifest.body["metadata"]["labels"]


def test_the_primary_deployment_and_its_pods() -> None:
    deployment = find(samples.render_project(), "Deployment", "api-r1")
    spec = deployment.body["spec"]

    pod_labels = {
        **MANAGED,
        "nebula.dev/service": "api",
        "nebula.dev/release": "r-1",
        "nebula.dev/process": "web",
    }
    assert spec["replicas"] == 2
    assert spec["minReadySeconds"] == 15
    assert spec["selector"] == {
        "matchLabels": {
            "nebula.dev/service": "api",
            "nebula.dev/release": "r-1",
            "nebula.dev/process": "web",
        }
    }
    assert spec["template"]["metadata"]["labels"] == pod_labels
    assert container(deployment) | {"env": None} == {
        "name": "web",
        "image": samples.API_IMAGE,
        "command": ["gunicorn", "app:app"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "envFrom": [{"configMapRef": {"name": "api-r1-vars"}}],
        "env": None,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    pod = spec["template"]["spec"]
    assert (pod["automountServiceAccountToken"], pod["terminationGracePeriodSeconds"]) == (
        False,
        30,
    )
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["template"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "api-data"}}
    ]


def test_overrides_of_the_environment_are_rendered() -> None:
    production = samples.render_project(env="production")

    assert find(production, "Deployment", "api-r1").body["spec"]["replicas"] == 4
    assert find(production, "ConfigMap", "api-r1-vars").body["data"]["LOG_LEVEL"] == "warn"
    assert (
        find(production, "Namespace", "shop-production").body["metadata"]["labels"][
            "nebula.dev/environment"
        ]
        == "production"
    )


def test_a_worker_with_a_port_gets_a_tcp_readiness_check_and_no_service() -> None:
    rendered = samples.render_project()
    worker = find(rendered, "Deployment", "api-r1-worker")

    assert container(worker)["readinessProbe"]["tcpSocket"] == {"port": 9000}
    assert container(worker)["ports"] == [{"name": "tcp", "containerPort": 9000, "protocol": "TCP"}]
    assert not [m for m in rendered if m.kind == "Service" and "worker" in m.name]


def test_http_readiness_path_defaults_to_root() -> None:
    deployment = find(samples.render_project(), "Deployment", "search-r1")

    assert container(deployment)["readinessProbe"]["httpGet"] == {"path": "/", "port": 9200}


def test_a_worker_without_a_port_has_no_probe_and_its_service_no_service_objects() -> None:
    rendered = samples.render_project(samples.WORKER_ONLY)

    assert [m.ref for m in rendered] == [
        "Namespace/shop-staging",
        "Deployment/jobs-r1",
        "CronJob/jobs-r1-hourly",
    ]
    assert "readinessProbe" not in container(rendered[1])
    assert "ports" not in container(rendered[1])
    assert "command" not in container(rendered[2])  # the image's default


def test_release_and_stable_services_select_the_primary_pods_of_the_release() -> None:
    rendered = samples.render_project()
    selector = {
        "nebula.dev/service": "api",
        "nebula.dev/release": "r-1",
        "nebula.dev/process": "web",
    }

    for name in ("api-r1", "api"):
        service = find(rendered, "Service", name)
        assert service.body["spec"]["selector"] == selector
        assert service.body["spec"]["ports"] == [
            {"name": "http", "port": 8080, "targetPort": 8080, "protocol": "TCP"}
        ]


def test_the_stable_service_follows_the_release_number() -> None:
    rendered = samples.render_project()
    spec = samples.release(number=7)

    stable = find(Renderer().service(spec), "Service", "api")

    assert stable.body["spec"]["selector"]["nebula.dev/release"] == "r-7"
    assert find(rendered, "Service", "api").body["metadata"] == stable.body["metadata"]


def test_release_command_job() -> None:
    job = find(samples.render_project(), "Job", "api-r1-release")
    spec = job.body["spec"]

    assert spec["backoffLimit"] == 0
    assert spec["template"]["metadata"]["labels"]["nebula.dev/process"] == "release_command"
    assert spec["activeDeadlineSeconds"] == 300
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert container(job)["image"] == samples.API_IMAGE
    assert container(job)["command"] == ["bin/migrate", "--yes"]
    assert container(job)["envFrom"] == [{"configMapRef": {"name": "api-r1-vars"}}]


def test_cron_and_job_processes() -> None:
    rendered = samples.render_project()
    cron = find(rendered, "CronJob", "api-r1-nightly")
    job = find(rendered, "Job", "api-r1-backfill")

    assert cron.body["spec"]["schedule"] == "0 3 * * *"
    assert cron.body["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron.body["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert container(cron)["command"] == ["bin/report"]
    assert job.body["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert "backoffLimit" not in job.body["spec"]
    assert container(job)["command"] == ["bin/backfill"]


def test_volume_claims_are_per_service() -> None:
    claim = find(samples.render_project(), "PersistentVolumeClaim", "api-data")

    assert claim.body["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "5Gi"}},
    }


def test_database_objects() -> None:
    rendered = samples.render_project()
    statefulset = find(rendered, "StatefulSet", "db")
    service = find(rendered, "Service", "db")
    spec = statefulset.body["spec"]

    assert spec["serviceName"] == "db"
    assert spec["replicas"] == 1
    assert container(statefulset)["image"] == "postgres:16"
    assert container(statefulset)["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"memory": "1Gi"},
    }
    assert container(statefulset)["readinessProbe"]["exec"]["command"][0] == "pg_isready"
    assert spec["volumeClaimTemplates"][0]["spec"]["resources"] == {"requests": {"storage": "20Gi"}}
    assert [e["valueFrom"]["secretKeyRef"] for e in container(statefulset)["env"][:3]] == [
        {"name": "db-credentials", "key": "PGUSER"},
        {"name": "db-credentials", "key": "PGPASSWORD"},
        {"name": "db-credentials", "key": "PGDATABASE"},
    ]
    assert service.body["spec"]["ports"][0]["port"] == 5432
    assert service.body["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert spec["template"]["metadata"]["labels"]["nebula.dev/process"] == "postgres"


@pytest.mark.parametrize(
    ("size", "cpu", "memory"),
    [
        ("nano", "100m", "256Mi"),
        ("small", "250m", "512Mi"),
        ("medium", "500m", "1Gi"),
        ("large", "1", "2Gi"),
        ("xlarge", "2", "4Gi"),
    ],
)
def test_instance_sizes_map_to_requests_and_limits(size: str, cpu: str, memory: str) -> None:
    text = samples.WORKER_ONLY.replace(
        'command = ["bin/run"]', f'command = ["bin/run"]\ninstance_size = "{size}"'
    )
    deployment = find(samples.render_project(text), "Deployment", "jobs-r1")

    assert container(deployment)["resources"] == {
        "requests": {"cpu": cpu, "memory": memory},
        "limits": {"memory": memory},
    }


def test_the_size_table_covers_every_instance_size() -> None:
    assert {s.value for s in InstanceSize} == {"nano", "small", "medium", "large", "xlarge"}


def test_only_one_service_with_units() -> None:
    rendered = samples.render_project(units=["search"])

    assert [m.ref for m in rendered] == [
        "ConfigMap/search-r1-vars",
        "Deployment/search-r1",
        "Service/search-r1",
        "Service/search",
    ]


def test_a_job_process_named_like_the_release_job_is_refused() -> None:
    text = samples.SHOP.replace(
        "[services.api.processes.backfill]", "[services.api.processes.release]"
    )

    with pytest.raises(
        ConfigurationError, match="two objects would both be named Job/api-r1-release"
    ):
        samples.render_project(text)
