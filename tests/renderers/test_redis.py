"""A Redis database's objects (behaviour.md "Data services (1.2)"): its credentials Secret,
its Service on 6379, a one-replica StatefulSet with append-only data on a volume, the password
from the Secret only, readiness by TCP; valid against the schemas and the restricted profile."""

from __future__ import annotations

from renderers import capabilities, schemas
from tests.renderers import podsecurity, samples
from tests.renderers.samples import container, env_of, find

TEXT = f"""\
[environments.staging]
pod_security = "restricted"

[databases.cache]
engine = "redis"
version = "7.2"
volume_size = "2Gi"

[services.api]
image = "{samples.API_IMAGE}"

[services.api.processes.web]
type = "http"
port = 8000

[services.api.variables]
BROKER = "${{{{ cache.REDIS_URL }}}}"
CACHE = "${{{{ cache.REDIS_HOST }}}}:${{{{ cache.REDIS_PORT }}}}"
"""


def test_redis_renders_its_secret_service_and_statefulset() -> None:
    rendered = samples.render_project(TEXT)
    secret = find(rendered, "Secret", "cache-credentials").body
    host = "cache.shop-staging.svc.cluster.local"
    assert secret["stringData"] == {
        "REDIS_URL": f"redis://:<generated on the server>@{host}:6379/0",
        "REDIS_HOST": host,
        "REDIS_PORT": "6379",
        "REDIS_PASSWORD": "<generated on the server>",
    }
    service = find(rendered, "Service", "cache").body
    assert service["spec"]["ports"] == [
        {"name": "redis", "port": 6379, "targetPort": 6379, "protocol": "TCP"}
    ]
    statefulset = find(rendered, "StatefulSet", "cache")
    assert statefulset.body["spec"]["replicas"] == 1
    redis = container(statefulset)
    assert redis["image"] == "redis:7.2"
    assert redis["command"] == [
        "docker-entrypoint.sh",  # kept: as root (baseline) it drops to the redis user
        "redis-server",
        "--appendonly",
        "yes",
        "--dir",
        "/data",
        "--requirepass",
        "$(REDIS_PASSWORD)",
    ]
    assert redis["env"] == [
        {
            "name": "REDIS_PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "cache-credentials", "key": "REDIS_PASSWORD"}},
        }
    ]
    assert redis["readinessProbe"] == {
        "tcpSocket": {"port": 6379},
        "periodSeconds": 5,
        "failureThreshold": 3,
    }
    assert redis["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    claim = statefulset.body["spec"]["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    pod = podsecurity.pod_spec(statefulset.body)
    assert pod is not None and podsecurity.violations(pod) == []
    assert pod["securityContext"]["fsGroup"] == 999
    schemas.validate(rendered, capabilities.RECENT)


def test_a_service_reads_the_url_from_the_secret_and_the_address_as_a_value() -> None:
    rendered = samples.render_project(TEXT)
    api = find(rendered, "Deployment", "api-r1")
    assert env_of(api) == [
        {
            "name": "BROKER",
            "valueFrom": {"secretKeyRef": {"name": "cache-credentials", "key": "REDIS_URL"}},
        }
    ]
    variables = find(rendered, "ConfigMap", "api-r1-vars").body
    assert variables["data"] == {"CACHE": "cache.shop-staging.svc.cluster.local:6379"}
