"""A database's objects (behaviour.md "Databases" and "Data services (1.2)"): its credentials
Secret, a Service on its port, and a one-replica StatefulSet with its data on a volume; or,
for postgres where the environment says ``postgres = "cloudnative-pg"``, one CloudNativePG
``Cluster`` and nothing else (the operator makes the pods, the Services and the Secret).

Postgres and Redis differ in image, port, command, probe and what they export; the rest is
shared. Every credential (a URL or a password) lives in the ``<db>-credentials`` Secret and
reaches services as a ``secretKeyRef``; host and port are plain values. A Cluster's exports
all come from the operator's ``<db>-app`` Secret.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import quote as url_quote

from reconciler.model.engines import DatabaseEngine
from reconciler.model.specs import DatabaseSpec, PodSecurity
from renderers import naming, objects, pods, variables
from renderers.manifests import Draft
from renderers.releases import DatabaseUnit, Scope
from renderers.secrets import Placeholders, Sensitive

POSTGRES_DATA = "/var/lib/postgresql/data"
REDIS_DATA = "/data"
# The official (Debian) images' own non-root users: postgres and redis are both 999:999.
IMAGE_USER = 999


@dataclass(frozen=True)
class _Engine:
    container: str  # the container's (and the port's) name
    data: str  # where the volume is mounted


_ENGINES = {
    DatabaseEngine.POSTGRES: _Engine("postgres", POSTGRES_DATA),
    DatabaseEngine.REDIS: _Engine("redis", REDIS_DATA),
}


def credentials(
    scope: Scope, spec: DatabaseSpec, password: Sensitive | Placeholders
) -> dict[str, str]:
    """The keys a database exports (``${{ db.KEY }}``), with their values."""
    database = spec.name
    host = naming.host(database, scope.namespace)
    port = spec.port
    if isinstance(password, Placeholders):
        secret = shown = password.password()
    else:
        secret, shown = password.value, url_quote(password.value, safe="")
    if spec.engine is DatabaseEngine.REDIS:
        return {
            "REDIS_URL": f"redis://:{shown}@{host}:{port}/0",
            "REDIS_HOST": host,
            "REDIS_PORT": str(port),
            "REDIS_PASSWORD": secret,
        }
    # PGUSER and PGDATABASE are the database's slug.
    return {
        "DATABASE_URL": f"postgresql://{database}:{shown}@{host}:{port}/{database}",
        "PGHOST": host,
        "PGPORT": str(port),
        "PGUSER": database,
        "PGPASSWORD": secret,
        "PGDATABASE": database,
    }


# The official CloudNativePG operand images, by postgres major version.
CLOUDNATIVE_IMAGE = "ghcr.io/cloudnative-pg/postgresql"


def database(unit: DatabaseUnit, password: Sensitive | Placeholders) -> list[Draft]:
    """Credentials Secret, Service and StatefulSet of one database, or its Cluster."""
    scope, spec = unit.scope, unit.spec
    if spec.cloudnative:
        return [cluster(unit)]
    engine = _ENGINES[spec.engine]
    namespace = scope.namespace
    labels = naming.unit_labels(scope.project, scope.environment, spec.name)
    selector = naming.with_process(((naming.SERVICE, spec.name),), engine.container)
    secret_name = naming.credentials(spec.name)
    keys = credentials(scope, spec, password)
    secret = objects.secret_draft(secret_name, namespace, labels, tuple(keys.items()), password)
    service = objects.service_draft(
        spec.name, namespace, labels, selector, engine.container, spec.port
    )
    container = _container(spec, engine, secret_name)
    pod = pods.Pod(
        naming.with_process(labels, engine.container),
        (container,),
        settings=pods.database_settings(spec.platform, IMAGE_USER),
    )
    values = objects.meta(
        spec.name,
        namespace,
        labels,
        service_name=spec.name,
        selector=selector,
        pod=pod,
        claim_name="data",
        volume_size=spec.volume_size,
    )
    statefulset = Draft("StatefulSet", spec.name, "statefulset.j2", values)
    return [secret, service, statefulset]


def cluster(unit: DatabaseUnit) -> Draft:
    """A ``postgresql.cnpg.io/v1`` Cluster: ``instances`` pods, one primary and its standbys,
    each with a volume of ``volume_size``; a database and an owner both named after it."""
    scope, spec = unit.scope, unit.spec
    labels = naming.unit_labels(scope.project, scope.environment, spec.name)
    values = objects.meta(
        spec.name,
        scope.namespace,
        labels,
        instances=spec.instances,
        image=f"{CLOUDNATIVE_IMAGE}:{spec.version}",
        volume_size=spec.volume_size,
        cpu=spec.instance_size.cpu,
        memory=spec.instance_size.memory,
        database=spec.name,
        pull_secrets=spec.platform.image_pull_secrets,
    )
    return Draft("Cluster", spec.name, "cnpg-cluster.j2", values)


def _container(spec: DatabaseSpec, engine: _Engine, secret_name: str) -> pods.Container:
    def from_secret(env: str, key: str) -> variables.EnvEntry:
        return variables.EnvEntry(env, ref=variables.SecretRef(secret_name, key))

    base = pods.Container(
        name=engine.container,
        image=f"{engine.container}:{spec.version}",
        command=None,
        cpu=spec.instance_size.cpu,
        memory=spec.instance_size.memory,
        ports=(pods.Port(engine.container, spec.port),),
        mounts=(pods.Mount("data", engine.data),),
        drop_all=spec.platform.pod_security is PodSecurity.RESTRICTED,
    )
    if spec.engine is DatabaseEngine.REDIS:
        # The password reaches redis-server through the environment (Kubernetes expands
        # $(VAR) in a command), never in the manifest; every write goes to the AOF. The image's
        # entrypoint stays first: started as root (baseline), it drops to the redis user.
        return replace(
            base,
            command=(
                "docker-entrypoint.sh",
                "redis-server",
                "--appendonly",
                "yes",
                "--dir",
                REDIS_DATA,
                "--requirepass",
                "$(REDIS_PASSWORD)",
            ),
            env=(from_secret("REDIS_PASSWORD", "REDIS_PASSWORD"),),
            probe=pods.Probe("tcp", port=spec.port),
        )
    return replace(
        base,
        env=(
            from_secret("POSTGRES_USER", "PGUSER"),
            from_secret("POSTGRES_PASSWORD", "PGPASSWORD"),
            from_secret("POSTGRES_DB", "PGDATABASE"),
            variables.EnvEntry("PGDATA", value=f"{POSTGRES_DATA}/pgdata"),
        ),
        probe=pods.Probe(
            "exec",
            command=("pg_isready", "-h", "127.0.0.1", "-U", spec.name, "-d", spec.name),
        ),
    )
