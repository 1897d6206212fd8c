"""Every Compose key either carried over or reported at its ``FILE:LINE:COL`` with what to do:
the fixtures under fixtures/compose pin each line (every-mapping.yml, every-report.yml) and
each refusal (refused/), and every result is one Nebula's own validator accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.importing import composing
from reconciler.importing.notes import Level
from reconciler.model import validation
from reconciler.model.specs import DatabaseEngine, ProcessType

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "compose"


def convert(name: str, **images: str) -> composing.Imported:
    def read_file(path: str) -> str | None:
        found = FIXTURES / path
        return found.read_text(encoding="utf-8") if found.is_file() else None

    text = (FIXTURES / name).read_text(encoding="utf-8")
    return composing.convert(text, name, project="shop", images=images, read_file=read_file)


EVERY_REPORT = [
    "every-report.yml:4:12: services.web.image 'nginx' has no tag: written as nginx:latest; pin it by digest: name@sha256:<64 hex digits>",
    "every-report.yml:5:5: services.web.privileged is not carried over; Nebula's pods run without it (pod_security); remove it",
    "every-report.yml:6:5: services.web.cap_add is not carried over; Nebula's pods run without it (pod_security); remove it",
    "every-report.yml:7:5: services.web.user is not carried over; set USER in the image",
    "every-report.yml:8:5: services.web.working_dir is not carried over; set WORKDIR in the image",
    "every-report.yml:9:5: services.web.labels is not carried over; use [services.X.kubernetes] labels or annotations (routing labels: domains)",
    "every-report.yml:11:5: services.web.profiles is not carried over; the service is imported always; remove it from nebula.toml if not wanted",
    "every-report.yml:12:5: services.web.logging is not carried over; remove it (the cluster collects logs)",
    "every-report.yml:15:14: services.web.restart 'no' is not carried over (the cluster restarts a long-running process always); make it exit only on failure",
    "every-report.yml:16:5: services.web.platform is not carried over; build the image for the cluster's nodes (node_selector kubernetes.io/arch)",
    "every-report.yml:17:5: services.web.secrets is not carried over; set each secret with nebula secret set and reference it as ${{ secret.NAME }}",
    "every-report.yml:19:9: services.web.ports publishes port 80 on the host; Nebula publishes nothing: other services reach it in the environment; for public traffic give the process domains (with a gateway or ingress_class)",
    "every-report.yml:20:9: services.web: port 443 is not carried over (a process has one port); run a second service for it, or drop it",
    "every-report.yml:21:9: services.web.ports: '5353:53/udp' is not carried over (Nebula routes one TCP port per process); remove it, or run what needs it elsewhere",
    "every-report.yml:22:9: services.web.ports: the port range '9000-9002' is not carried over; only its first port, 9000, is used",
    "every-report.yml:22:9: services.web: port 9000 is not carried over (a process has one port); run a second service for it, or drop it",
    "every-report.yml:24:9: services.web.volumes: the host path './html:/usr/share/nginx/html' is not carried over; bake the files into the image, or use a named volume",
    "every-report.yml:25:9: services.web.volumes: the anonymous volume '/var/cache/nginx' is not carried over; the container's own filesystem serves it; name a volume to keep data",
    "every-report.yml:26:9: services.web.volumes: the tmpfs mount '/tmp' is not carried over; the container's own filesystem serves it; name a volume to keep data",
    "every-report.yml:28:9: services.web.volumes: 'logs' becomes a 1Gi volume, and a release of web stops the running one first (accept_downtime); set the size it needs",
    "every-report.yml:28:9: services.web.volumes: 'logs' is mounted read-write (Nebula has no read-only volume); nothing to do, unless it matters",
    "every-report.yml:29:9: services.web.volumes: 'shared' becomes a 1Gi volume, and a release of web stops the running one first (accept_downtime); set the size it needs",
    "every-report.yml:31:13: services.web.healthcheck.test runs a command, which has no equivalent; Nebula checks an http process with a GET of readiness_path and a worker's port with a TCP connect",
    "every-report.yml:32:7: services.web.healthcheck.start_period is not carried over; Nebula's readiness check keeps its own timing; stabilization_seconds says how long replicas must stay ready",
    "every-report.yml:34:7: services.web.deploy.mode is not carried over; Nebula runs a number of replicas (global mode has no equivalent)",
    "every-report.yml:35:7: services.web.deploy.placement is not carried over; use [services.X.kubernetes] node_selector or tolerations",
    "every-report.yml:39:11: services.web.deploy.resources.limits.pids has no equivalent; Nebula sets cpu and memory only",
    "every-report.yml:43:9: services.web.depends_on.api.restart is not carried over; Nebula orders deploys only",
    "every-report.yml:44:7: services.web.depends_on names 'gone', which is not imported; add it once it is (see its own lines)",
    "every-report.yml:46:5: services.web.stop_signal is not carried over; make the process stop on SIGTERM",
    "every-report.yml:47:5: services.web.colour is not a Compose key; remove it",
    "every-report.yml:50:14: services.api.command uses ${PORT}, which Compose fills in from the shell; write the value in the command",
    "every-report.yml:50:14: services.api.command also replaces the image's ENTRYPOINT in Nebula (Compose replaced its CMD only); if the image has an ENTRYPOINT, write it first in command",
    "every-report.yml:52:9: services.api.volumes: 'shared' is web's already (a volume belongs to one service); share the data through a database or another service instead",
    "every-report.yml:54:7: services.api.environment.my.setting is not a variable name Nebula takes; rename it: letters, digits and '_'",
    "every-report.yml:56:12: services.db.image names no postgres version: the database runs version 16; set version in [databases.db] if it needs another",
    "every-report.yml:57:5: services.db.command is not carried over (a postgres database); Nebula runs PostgreSQL with its own settings; remove it",
    "every-report.yml:58:5: services.db.ports is not carried over (a postgres database); the database is reached inside the environment only, as ${{ db.PGHOST }}",
    "every-report.yml:61:9: services.db.volumes: './init' is not carried over (the database keeps its data on its own volume); run setup scripts as a release_command of the service that uses it",
    "every-report.yml:62:5: services.db.deploy is not carried over (a postgres database); size it with instance_size and volume_size in [databases.db]",
    "every-report.yml:66:1: networks is not carried over; services of an environment reach each other by name; remove networks",
    "every-report.yml:68:1: secrets is not carried over; set each secret with nebula secret set and reference it as ${{ secret.NAME }}",
    "every-report.yml:71:1: configs is not carried over; bake the files into the image, or pass the values as variables",
    "every-report.yml:76:5: volumes.logs.driver is not carried over; the cluster's default storage class provides the volume",
    "every-report.yml:77:5: volumes.logs.labels is not carried over; remove them",
    "every-report.yml:80:5: volumes.shared is external: its data is not carried over; the volume starts empty; copy the data in after the first deploy",
    "every-report.yml:81:1: 'flavour' is not a Compose key; remove it",
]
EVERY_MAPPING = [
    "app.env:4:1: API_TOKEN looks like a secret: written as ${{ secret.API_TOKEN }}, its value not copied; set it with: nebula secret set shop staging API_TOKEN (and production)",
    "every-mapping.yml:26:7: services.api.environment.STRIPE_KEY looks like a secret: written as ${{ secret.STRIPE_KEY }}, its value not copied; set it with: nebula secret set shop staging STRIPE_KEY (and production)",
    "every-mapping.yml:37:20: services.api waits for migrate to complete; Nebula deploys it after migrate but does not wait for its job; if it prepares api (migrations), make it api's release_command instead",
    "every-mapping.yml:46:9: services.api.volumes: 'uploads' becomes a 1Gi volume, and a release of api stops the running one first (accept_downtime); set the size it needs",
    "every-mapping.yml:50:9: services.search.ports publishes port 9200 on the host; Nebula publishes nothing: other services reach it in the environment; for public traffic give the process domains (with a gateway or ingress_class)",
    "every-mapping.yml:56:14: services.migrate.command also replaces the image's ENTRYPOINT in Nebula (Compose replaced its CMD only); if the image has an ENTRYPOINT, write it first in command",
    "every-mapping.yml:62:9: services.mailer.environment.SMTP_HOST has no value (Compose passes the shell's through): written as ${{ secret.SMTP_HOST }}, its value not copied; set it with: nebula secret set shop staging SMTP_HOST (and production)",
    "every-mapping.yml:66:7: services.db.environment.POSTGRES_USER is not carried over (Nebula sets up PostgreSQL and generates its credentials); the services that use it read them as ${{ db.KEY }}",
    "every-mapping.yml:67:7: services.db.environment.POSTGRES_PASSWORD is not carried over (Nebula sets up PostgreSQL and generates its credentials); the services that use it read them as ${{ db.KEY }}",
    "every-mapping.yml:68:7: services.db.environment.POSTGRES_DB is not carried over (Nebula sets up PostgreSQL and generates its credentials); the services that use it read them as ${{ db.KEY }}",
]


def test_every_mapping_is_carried_over_and_the_rest_reported() -> None:
    imported = convert("every-mapping.yml")
    assert [str(n) for n in imported.notes] == EVERY_MAPPING
    assert imported.text == (FIXTURES / "every-mapping.toml").read_text(encoding="utf-8")
    project = validation.load(imported.text or "")
    staging, production = project.configs
    assert (staging.environment.name, production.environment.protected) == ("staging", True)
    api = staging.service("api")
    assert api is not None
    (web,) = api.processes
    assert (web.type, web.port, web.readiness_path, web.replicas) == (
        ProcessType.HTTP,
        8080,
        "/healthz",
        3,
    )
    assert (web.cpu, web.memory, web.shutdown_grace_seconds) == ("500m", "256Mi", 90)
    assert web.command == ("/docker-entrypoint.sh", "gunicorn", "app:app")
    assert api.depends_on == ("db", "cache", "migrate")
    assert [(v.name, v.mount, v.size, v.accept_downtime) for v in api.volumes] == [
        ("uploads", "/srv/uploads", "1Gi", True)
    ]
    variables = dict(api.variables)
    assert variables["DATABASE_URL"] == "${{ db.DATABASE_URL }}"
    assert variables["DB_PASSWORD"] == "${{ db.PGPASSWORD }}"
    assert variables["CACHE_URL"] == "${{ cache.REDIS_URL }}"
    assert variables["SEARCH_URL"] == "http://${{ host(search) }}/index"
    assert variables["STRIPE_KEY"] == "${{ secret.STRIPE_KEY }}"
    assert variables["LOG_LEVEL"] == "info", "environment wins over env_file"
    engines = {d.name: (d.engine, d.version) for d in staging.databases}
    assert engines == {"db": (DatabaseEngine.POSTGRES, "16"), "cache": (DatabaseEngine.REDIS, "7")}
    migrate = staging.service("migrate")
    assert migrate is not None and migrate.processes[0].type is ProcessType.JOB
    assert imported.secrets == ("API_TOKEN", "STRIPE_KEY", "SMTP_HOST")


def test_no_secret_value_reaches_the_file_or_the_notes() -> None:
    imported = convert("every-mapping.yml")
    shown = (imported.text or "") + "\n".join(str(n) for n in imported.notes)
    for value in ("s3cret", "sk_live_abc", "tok-123"):
        assert value not in shown


def test_every_key_without_an_equivalent_is_reported_once_at_its_place() -> None:
    imported = convert("every-report.yml")
    assert [str(n) for n in imported.notes] == EVERY_REPORT
    assert imported.text == (FIXTURES / "every-report.toml").read_text(encoding="utf-8")
    validation.load(imported.text or "")


REFUSED = {
    "build-without-image.yml": [
        "build-without-image.yml:3:5: error: services.web has build: but no image; build and push it, then give it: --image web=REGISTRY/IMAGE:TAG",
        "build-without-image.yml:6:5: error: services.worker has build: but no image; build and push it, then give it: --image worker=REGISTRY/IMAGE:TAG",
        "build-without-image.yml:9:3: error: services.nothing has no image; add an image: key, or give it: --image nothing=REGISTRY/IMAGE:TAG",
    ],
    "image-from-shell.yml": [
        "image-from-shell.yml:3:12: error: services.web.image uses ${REGISTRY}, which Compose fills in from the shell; give the image: --image web=REGISTRY/IMAGE:TAG",
    ],
    "no-services.yml": [
        "no-services.yml:1:1: error: the file declares no services; import a Compose file with a services: mapping",
    ],
    "invalid-yaml.yml": [
        "invalid-yaml.yml:4:11: error: invalid YAML: mapping values are not allowed in this context; fix the YAML (docker compose config shows it too)",
    ],
    "duplicate-key.yml": [
        "duplicate-key.yml:4:3: error: key 'web' is written twice in this mapping; fix the YAML (docker compose config shows it too)",
    ],
    "same-slug.yml": [
        "same-slug.yml:2:3: service 'my_app' is named 'my-app' (a slug: lowercase letters, digits and '-'); use that name for it in commands",
        "same-slug.yml:4:3: error: services 'my_app' and 'my-app' both become 'my-app'; rename one of them in the Compose file",
    ],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_file_gives_no_text_and_says_where(name: str) -> None:
    imported = convert(f"refused/{name}")
    assert imported.text is None
    assert [str(n).removeprefix("refused/") for n in imported.notes] == REFUSED[name]
    assert any(n.level is Level.REFUSED for n in imported.notes)


def test_a_file_the_validator_refuses_gives_no_text_and_its_errors() -> None:
    imported = convert("refused/dependency-cycle.yml")
    assert imported.text is None
    assert [p.message for p in imported.problems] == ["dependency cycle: api -> search -> api"]
