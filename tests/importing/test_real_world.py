"""Compose files written in the style of public web + database + cache stacks (each names its
model in a comment): each converts to a nebula.toml Nebula's validator accepts, its postgres and
redis become databases reached by reference, and no secret value is copied or printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.importing import composing
from reconciler.model import validation
from reconciler.model.specs import DatabaseEngine, ProcessType, ProjectFile

REAL_WORLD = Path(__file__).resolve().parents[2] / "fixtures" / "compose" / "real-world"
IMAGES = {  # the two services the Rails stack builds
    "web": "registry.example.com/acme/store:3.2.0",
    "sidekiq": "registry.example.com/acme/store:3.2.0",
}
SECRET_VALUES = {
    "django-celery": ["f7c1b2e0a9d34c5e8b6a1d2c3e4f5a6b", "4f9a1c0e7d2b", "0123456789abcdef@"],
    "rails-sidekiq": [],
    "node-mongo": ["root:example", "change-me"],
    "wordpress-mysql": ["somewordpress"],
}


def convert(stack: str, images: dict[str, str] | None = None) -> composing.Imported:
    folder = REAL_WORLD / stack

    def read_file(path: str) -> str | None:
        found = folder / path
        return found.read_text(encoding="utf-8") if found.is_file() else None

    text = (folder / "docker-compose.yml").read_text(encoding="utf-8")
    return composing.convert(
        text, "docker-compose.yml", project=stack, images=images, read_file=read_file
    )


def loaded(imported: composing.Imported) -> ProjectFile:
    assert imported.text is not None, [str(n) for n in imported.notes] + [
        str(p) for p in imported.problems
    ]
    return validation.load(imported.text)


@pytest.mark.parametrize("stack", sorted(SECRET_VALUES))
def test_each_stack_converts_to_a_valid_file_without_its_secrets(stack: str) -> None:
    imported = convert(stack, IMAGES if stack == "rails-sidekiq" else None)
    loaded(imported)
    shown = (imported.text or "") + "\n".join(str(n) for n in imported.notes)
    for value in SECRET_VALUES[stack]:
        assert value not in shown


def test_django_celery_postgres_redis() -> None:
    imported = convert("django-celery")
    staging = loaded(imported).configs[0]
    assert {d.name: d.engine for d in staging.databases} == {
        "postgres": DatabaseEngine.POSTGRES,
        "redis": DatabaseEngine.REDIS,
    }
    django = staging.service("django")
    assert django is not None
    (web,) = django.processes
    assert (web.type, web.port, web.readiness_path, web.replicas) == (
        ProcessType.HTTP,
        8000,
        "/healthz/",
        2,
    )
    variables = dict(django.variables)
    assert (
        variables["POSTGRES_PASSWORD"] == "${{ postgres.PGPASSWORD }}"
    )  # from the shared env_file
    assert variables["POSTGRES_HOST"] == "${{ postgres.PGHOST }}"
    assert variables["CELERY_BROKER_URL"] == "${{ redis.REDIS_URL }}"
    assert variables["DJANGO_SECRET_KEY"] == "${{ secret.DJANGO_SECRET_KEY }}"
    assert django.depends_on == ("migrate", "postgres")
    migrate = staging.service("migrate")
    assert migrate is not None and migrate.processes[0].type is ProcessType.JOB
    workers = [staging.service(n) for n in ("celeryworker", "celerybeat")]
    assert [s.processes[0].type for s in workers if s is not None] == [ProcessType.WORKER] * 2
    assert imported.secrets == ("DJANGO_SECRET_KEY", "SENTRY_DSN")
    notes = [str(n) for n in imported.notes]
    assert notes[0] == (
        "./.envs/.django:3:1: DJANGO_SECRET_KEY looks like a secret: written as ${{ secret."
        "DJANGO_SECRET_KEY }}, its value not copied; set it with: nebula secret set "
        "django-celery staging DJANGO_SECRET_KEY (and production)"
    )


def test_rails_sidekiq_needs_its_images_given() -> None:
    refused = convert("rails-sidekiq")
    assert refused.text is None
    assert [str(n) for n in refused.notes if n.location.line in (22, 42)] == [
        "docker-compose.yml:22:5: error: services.web has build: but no image; build and push it, then give it: --image web=REGISTRY/IMAGE:TAG",
        "docker-compose.yml:42:5: error: services.sidekiq has build: but no image; build and push it, then give it: --image sidekiq=REGISTRY/IMAGE:TAG",
    ]
    staging = loaded(convert("rails-sidekiq", IMAGES)).configs[0]
    web = staging.service("web")
    assert web is not None
    variables = dict(web.variables)
    assert variables["DATABASE_URL"] == "${{ db.DATABASE_URL }}"
    assert variables["REDIS_URL"] == (
        "redis://:${{ redis.REDIS_PASSWORD }}@${{ redis.REDIS_HOST }}:${{ redis.REDIS_PORT }}/1"
    )
    assert variables["SECRET_KEY_BASE"] == "${{ secret.SECRET_KEY_BASE }}"


def test_node_mongo_keeps_mongo_as_a_service_and_says_so() -> None:
    imported = convert("node-mongo")
    staging = loaded(imported).configs[0]
    assert staging.databases == ()
    mongo = staging.service("mongo")
    assert mongo is not None
    (process,) = mongo.processes
    assert (process.type, process.port) == (ProcessType.WORKER, 27017)
    api = staging.service("api")
    assert api is not None and dict(api.variables)["MONGO_URL"] == "${{ secret.MONGO_URL }}"
    notes = [str(n) for n in imported.notes]
    assert (
        "docker-compose.yml:54:1: networks is not carried over; services of an environment "
        "reach each other by name; remove networks"
    ) in notes
    assert (
        "docker-compose.yml:50:5: services.mongo-express.profiles is not carried over; the "
        "service is imported always; remove it from nebula.toml if not wanted"
    ) in notes


def test_wordpress_mysql_shares_one_secret_for_one_password() -> None:
    imported = convert("wordpress-mysql")
    staging = loaded(imported).configs[0]
    db, wordpress = staging.service("db"), staging.service("wordpress")
    assert db is not None and wordpress is not None
    assert db.processes[0].type is ProcessType.WORKER  # MySQL speaks no HTTP: a TCP check
    assert dict(wordpress.variables)["WORDPRESS_DB_PASSWORD"] == "${{ secret.MYSQL_PASSWORD }}"
    assert imported.secrets == ("MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD")
