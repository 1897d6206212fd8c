"""Postgres as a CloudNativePG Cluster (behaviour.md "Data services (1.2)"): where the
environment says ``postgres = "cloudnative-pg"``, a database is one ``postgresql.cnpg.io/v1``
Cluster (valid against the published CRD's schema) and nothing else, and every export reaches
services from the operator's ``<db>-app`` Secret; elsewhere it stays a StatefulSet."""

from __future__ import annotations

import pytest

from reconciler.errors import ManifestError
from renderers import capabilities, schemas
from renderers.manifests import Manifest
from tests.renderers import samples
from tests.renderers.samples import env_of, find

TEXT = f"""\
[environments.staging]

[environments.production]
postgres = "cloudnative-pg"
image_pull_secrets = ["regcred"]

[databases.db]
version = "17"
instance_size = "medium"
volume_size = "50Gi"

[databases.db.environments.production]
automatic_failover = true

[services.api]
image = "{samples.API_IMAGE}"

[services.api.processes.web]
type = "http"
port = 8000

[services.api.variables]
DATABASE_URL = "${{{{ db.DATABASE_URL }}}}"
PGHOST = "${{{{ db.PGHOST }}}}"
DSN = "host=${{{{ db.PGHOST }}}} port=${{{{ db.PGPORT }}}} dbname=${{{{ db.PGDATABASE }}}}"
"""


def _ref(secret: str, key: str) -> dict[str, object]:
    return {"secretKeyRef": {"name": secret, "key": key}}


def test_a_cloudnative_database_is_one_cluster_and_valid_against_the_crd() -> None:
    rendered = samples.render_project(TEXT, "production")
    db = [m for m in rendered if m.name.startswith("db")]
    assert [m.ref for m in db] == ["Cluster/db"]
    cluster = find(rendered, "Cluster", "db")
    assert cluster.api_version == "postgresql.cnpg.io/v1"
    assert cluster.body["metadata"]["labels"]["nebula.dev/service"] == "db"
    assert cluster.body["spec"] == {
        "instances": 3,
        "imageName": "ghcr.io/cloudnative-pg/postgresql:17",
        "primaryUpdateStrategy": "unsupervised",
        "storage": {"size": "50Gi"},
        "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi"},
            "limits": {"memory": "1Gi"},
        },
        "bootstrap": {"initdb": {"database": "db", "owner": "db"}},
        "imagePullSecrets": [{"name": "regcred"}],
    }
    validation = schemas.validate(rendered, capabilities.RECENT)
    assert validation.stand_ins == ()


def test_services_read_every_export_from_the_operators_app_secret() -> None:
    rendered = samples.render_project(TEXT, "production")
    web = next(m for m in rendered if m.kind == "Deployment")
    env = {e["name"]: e for e in env_of(web)}
    assert env["DATABASE_URL"]["valueFrom"] == _ref("db-app", "uri")
    assert env["PGHOST"]["valueFrom"] == _ref("db-app", "host")
    hidden = {e["valueFrom"]["secretKeyRef"]["key"] for n, e in env.items() if "NEBULA_REF_" in n}
    assert hidden == {"host", "port", "dbname"}
    assert "db-credentials" not in str(web.body)


def test_staging_keeps_its_statefulset() -> None:
    rendered = samples.render_project(TEXT, "staging")
    assert {m.ref for m in rendered if m.name.startswith("db")} == {
        "Secret/db-credentials",
        "Service/db",
        "StatefulSet/db",
    }
    web = next(m for m in rendered if m.kind == "Deployment")
    env = {e["name"]: e for e in env_of(web)}
    assert env["DATABASE_URL"]["valueFrom"] == _ref("db-credentials", "DATABASE_URL")


def test_the_crd_schema_refuses_a_field_the_operator_would_drop() -> None:
    cluster = find(samples.render_project(TEXT, "production"), "Cluster", "db")
    body = {**cluster.body, "spec": {**cluster.body["spec"], "replicas": 3}}
    wrong = Manifest(cluster.api_version, "Cluster", "db", cluster.namespace, "", body)
    with pytest.raises(ManifestError, match="Cluster/db does not match the cnpg-cluster-v1 CRD"):
        schemas.validate([wrong], capabilities.RECENT)
