"""No silent settings (behaviour.md "Data services": "Nebula never records a setting it does
not carry out"): every key a nebula.toml may hold is walked here, and changing it changes the
rendered manifests, or Nebula's behaviour (its effective spec changes, and the tests named
prove what it does), or it is metadata a person reads (manifests unchanged).

The keys come from the validator's own key lists: a key the validator starts accepting fails
this test until the table says which of the three it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pytest

from reconciler.model import databases, environments, podsettings, units, validation
from reconciler.model.specs import ProjectFile
from renderers import naming
from renderers.capabilities import RECENT
from renderers.rendering import Renderer
from renderers.secrets import PLACEHOLDERS

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "registry.example.com/shop/api@sha256:" + "a" * 64
OTHER = "registry.example.com/shop/api@sha256:" + "b" * 64


class Effect(StrEnum):
    MANIFESTS = "manifests"  # the rendered objects change
    BEHAVIOUR = "behaviour"  # what Nebula does changes; ``proof`` names the tests that show it
    METADATA = "metadata"  # shown to people only: the rendered objects stay the same
    TABLE = "table"  # holds other keys, each walked on its own


@dataclass(frozen=True)
class Key:
    path: str  # "services.*.processes.*.port"
    effect: Effect
    section: str = ""  # the table the key is written in (the base file's, or a new one)
    before: str = ""  # the lines there before ("" = the default)
    after: str = ""
    env: str = "staging"  # where the change is rendered
    # Tests showing the behaviour: "file::word", the word the test exercises it by.
    proof: tuple[str, ...] = ()
    also: tuple[tuple[str, str], ...] = ()  # lines both files add to other tables


ROUTED = 'gateway = "infra/public"'
BASE: dict[str, str] = {
    "project": "",
    "environments.staging": "",
    "environments.production": f'postgres = "cloudnative-pg"\n{ROUTED}',
    "databases.db": "",
    "databases.cache": 'engine = "redis"',
    "databases.spare": "",
    "services.api": f'image = "{IMAGE}"',
    "services.api.processes.web": 'type = "http"\nport = 8000',
    "services.api.processes.jobs": 'type = "worker"',
    "services.api.variables": 'URL = "${{ db.DATABASE_URL }}"',
    "services.api.kubernetes": "",
    "services.api.deploy": "",
    "services.other": f'image = "{OTHER}"',
    "services.other.processes.web": 'type = "http"\nport = 9000',
}
WEB = "services.api.processes.web"
JOBS = "services.api.processes.jobs"
STAGING = "environments.staging"
DOMAINS = ((WEB, 'domains = ["shop.example.com"]'),)
VOLUME = "services.api.volumes.data"


def _toml(sections: dict[str, str]) -> str:
    return "\n".join(f"[{name}]\n{body}\n" for name, body in sections.items())


def _file(key: Key, lines: str) -> str:
    sections = dict(BASE)
    for section, added in (*key.also, (key.section, lines)):
        sections[section] = "\n".join(x for x in (sections.get(section, ""), added) if x)
    return _toml(sections)


FILES = {
    "k8s/netpol.yaml": "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
    "metadata:\n  name: deny\nspec:\n  podSelector: {}\n"
}


def _project(text: str) -> ProjectFile:
    project, problems = validation.check(
        text,
        "nebula.toml",
        files=FILES,
        namespace=lambda env: naming.namespace("shop", env),
    )
    assert project is not None, [str(p) for p in problems]
    return project


def _rendered(project: ProjectFile, env: str) -> list[tuple[str, str]]:
    config = project.environment(env)
    assert config is not None
    manifests = Renderer(RECENT).project(
        "shop", config, secrets=PLACEHOLDERS, passwords=PLACEHOLDERS
    )
    return [(m.ref, m.text) for m in manifests]


S, E, P = "services.*", "environments.*", "services.*.processes.*"

KEYS = (
    # -- [project]
    Key("project.name", Effect.METADATA, "project", 'name = "Shop"', 'name = "The Shop"'),
    # -- [environments.NAME]
    Key(f"{E}.protected", Effect.BEHAVIOUR, STAGING, "", "protected = true",
        proof=("tests/requests/test_gated_requests.py::protected = true",)),
    Key(f"{E}.promote_from", Effect.BEHAVIOUR, "environments.production", "",
        'promote_from = "staging"', env="production",
        proof=("tests/requests/test_gated_requests.py::promote_from",)),
    Key(f"{E}.soak", Effect.BEHAVIOUR, "environments.production", 'promote_from = "staging"',
        'promote_from = "staging"\nsoak = "30m"', env="production",
        proof=("tests/core/test_gates.py::soak",)),
    Key(f"{E}.self_heal", Effect.BEHAVIOUR, STAGING, "", "self_heal = true",
        proof=("tests/engine/test_drifting.py::self_heal",)),
    Key(f"{E}.gateway", Effect.MANIFESTS, STAGING, 'ingress_class = "nginx"', ROUTED,
        also=DOMAINS),
    Key(f"{E}.ingress_class", Effect.MANIFESTS, STAGING, ROUTED, 'ingress_class = "nginx"',
        also=DOMAINS),
    Key(f"{E}.tls_issuer", Effect.MANIFESTS, STAGING, 'ingress_class = "nginx"',
        'ingress_class = "nginx"\ntls_issuer = "letsencrypt"', also=DOMAINS),
    Key(f"{E}.pod_security", Effect.MANIFESTS, "environments.staging", "",
        'pod_security = "restricted"'),
    Key(f"{E}.image_pull_secrets", Effect.MANIFESTS, "environments.staging", "",
        'image_pull_secrets = ["regcred"]'),
    Key(f"{E}.postgres", Effect.MANIFESTS, "environments.staging", "",
        'postgres = "cloudnative-pg"'),
    Key(f"{E}.manifests", Effect.MANIFESTS, "environments.staging", "",
        'manifests = ["k8s/netpol.yaml"]'),
    # -- [services.NAME]
    Key(f"{S}.image", Effect.MANIFESTS, "services.other", "", ""),  # set in _special
    Key(f"{S}.release_command", Effect.MANIFESTS, "services.api", "",
        'release_command = ["bin/migrate"]'),
    Key(f"{S}.release_command_timeout", Effect.MANIFESTS, "services.api",
        'release_command = ["bin/migrate"]',
        'release_command = ["bin/migrate"]\nrelease_command_timeout = 900'),
    Key(f"{S}.auto_deploy", Effect.BEHAVIOUR, "services.api", "", "auto_deploy = false",
        proof=("tests/gitops/test_polling.py::auto_deploy = false",)),
    Key(f"{S}.accept_downtime", Effect.BEHAVIOUR, "services.api", "", "accept_downtime = true",
        proof=("tests/engine/test_releases.py::volume=True",)),
    Key(f"{S}.processes", Effect.TABLE),
    Key(f"{S}.variables", Effect.MANIFESTS, "services.api.variables", "", 'LOG = "debug"'),
    Key(f"{S}.volumes", Effect.TABLE),
    Key(f"{S}.deploy", Effect.TABLE),
    Key(f"{S}.kubernetes", Effect.TABLE),
    Key(f"{S}.environments", Effect.TABLE),
    Key(f"{S}.deploy.depends_on", Effect.BEHAVIOUR, "services.api.deploy", "",
        'depends_on = ["other"]', proof=("tests/engine/test_stages.py::depends_on",)),
    # -- [services.NAME.processes.NAME]
    Key(f"{P}.type", Effect.MANIFESTS, JOBS, "", ""),  # set in _special
    Key(f"{P}.command", Effect.MANIFESTS, WEB, "", 'command = ["gunicorn"]'),
    Key(f"{P}.port", Effect.MANIFESTS, JOBS, "", "port = 7000"),
    Key(f"{P}.readiness_path", Effect.MANIFESTS, WEB, "", 'readiness_path = "/healthz"'),
    Key(f"{P}.replicas", Effect.MANIFESTS, WEB, "", "replicas = 3"),
    Key(f"{P}.instance_size", Effect.MANIFESTS, WEB, "", 'instance_size = "large"'),
    Key(f"{P}.stabilization_seconds", Effect.BEHAVIOUR, WEB, "", "stabilization_seconds = 60",
        proof=("tests/core/test_deciding.py::stabilization",)),
    Key(f"{P}.primary", Effect.MANIFESTS, JOBS, "", "port = 7000\nprimary = true"),
    Key(f"{P}.schedule", Effect.MANIFESTS, "services.api.processes.nightly",
        'type = "cron"\nschedule = "0 3 * * *"', 'type = "cron"\nschedule = "0 4 * * *"'),
    Key(f"{P}.cpu", Effect.MANIFESTS, WEB, "", 'cpu = "750m"'),
    Key(f"{P}.memory", Effect.MANIFESTS, WEB, "", 'memory = "1536Mi"'),
    Key(f"{P}.autoscale", Effect.MANIFESTS, WEB, "",
        "autoscale = { min = 2, max = 10, cpu_percent = 70 }"),
    Key(f"{P}.autoscale.min", Effect.MANIFESTS, WEB,
        "autoscale = { min = 2, max = 10, cpu_percent = 70 }",
        "autoscale = { min = 3, max = 10, cpu_percent = 70 }"),
    Key(f"{P}.autoscale.max", Effect.MANIFESTS, WEB,
        "autoscale = { min = 2, max = 10, cpu_percent = 70 }",
        "autoscale = { min = 2, max = 12, cpu_percent = 70 }"),
    Key(f"{P}.autoscale.cpu_percent", Effect.MANIFESTS, WEB,
        "autoscale = { min = 2, max = 10, cpu_percent = 70 }",
        "autoscale = { min = 2, max = 10, cpu_percent = 80 }"),
    Key(f"{P}.liveness_path", Effect.MANIFESTS, WEB, "", 'liveness_path = "/livez"'),
    Key(f"{P}.shutdown_grace", Effect.MANIFESTS, WEB, "", 'shutdown_grace = "45s"'),
    Key(f"{P}.domains", Effect.MANIFESTS, WEB, "", 'domains = ["shop.example.com"]',
        also=((STAGING, ROUTED),)),
    # -- [services.NAME.volumes.NAME]
    Key(f"{S}.volumes.*.mount", Effect.MANIFESTS, VOLUME, 'mount = "/data"', 'mount = "/srv"',
        also=((VOLUME, 'size = "1Gi"\naccept_downtime = true'),)),
    Key(f"{S}.volumes.*.size", Effect.MANIFESTS, VOLUME, 'size = "1Gi"', 'size = "2Gi"',
        also=((VOLUME, 'mount = "/data"\naccept_downtime = true'),)),
    # A volume's release stops the one running first: the service or each volume says so.
    Key(f"{S}.volumes.*.accept_downtime", Effect.BEHAVIOUR, VOLUME, "", "accept_downtime = true",
        also=((VOLUME, 'mount = "/data"\nsize = "1Gi"'), ("services.api", "accept_downtime = true")),
        proof=("tests/engine/test_releases.py::volume=True",)),
    # -- [services.NAME.kubernetes]
    Key(f"{S}.kubernetes.service_account", Effect.MANIFESTS, "services.api.kubernetes", "",
        'service_account = "api"'),
    Key(f"{S}.kubernetes.node_selector", Effect.MANIFESTS, "services.api.kubernetes", "",
        'node_selector = { "kubernetes.io/arch" = "amd64" }'),
    Key(f"{S}.kubernetes.tolerations", Effect.MANIFESTS, "services.api.kubernetes", "",
        'tolerations = [{ key = "d", operator = "Equal", value = "w", effect = "NoSchedule" }]'),
    *(
        Key(f"{S}.kubernetes.tolerations.{field}", Effect.MANIFESTS, "services.api.kubernetes",
            'tolerations = [{ key = "d", operator = "Equal", value = "w", effect = "NoSchedule" }]',
            'tolerations = [{ key = "d", operator = "Equal", value = "w", effect = "NoSchedule" }]'
            .replace(old, new))
        for field, old, new in (
            ("key", 'key = "d"', 'key = "e"'),
            ("operator", 'operator = "Equal", value = "w"', 'operator = "Exists"'),
            ("value", 'value = "w"', 'value = "x"'),
            ("effect", '"NoSchedule"', '"NoExecute"'),
        )
    ),
    Key(f"{S}.kubernetes.annotations", Effect.MANIFESTS, "services.api.kubernetes", "",
        'annotations = { "example.com/team" = "payments" }'),
    Key(f"{S}.kubernetes.labels", Effect.MANIFESTS, "services.api.kubernetes", "",
        'labels = { "team" = "payments" }'),
    # -- [databases.NAME]
    Key("databases.*.engine", Effect.MANIFESTS, "databases.spare", "", 'engine = "redis"'),
    Key("databases.*.version", Effect.MANIFESTS, "databases.db", "", 'version = "17"'),
    Key("databases.*.instance_size", Effect.MANIFESTS, "databases.db", "",
        'instance_size = "large"'),
    Key("databases.*.volume_size", Effect.MANIFESTS, "databases.db", "", 'volume_size = "20Gi"'),
    Key("databases.*.automatic_failover", Effect.MANIFESTS, "databases.db.environments.production",
        "", "automatic_failover = true", env="production"),
    Key("databases.*.instances", Effect.MANIFESTS, "databases.db.environments.production",
        "", "instances = 2", env="production"),
    Key("databases.*.environments", Effect.TABLE),
    # -- [kubernetes]
    Key("kubernetes.manifests", Effect.MANIFESTS, "kubernetes", "", 'manifests = ["k8s/"]'),
)  # fmt: skip


def _accepted() -> set[str]:
    """Every key the validator reads, as a dotted pattern."""
    out = {f"project.{k}" for k in validation.PROJECT_KEYS}
    out |= {f"kubernetes.{k}" for k in validation.KUBERNETES_KEYS}
    out |= {f"{E}.{k}" for k in environments.ENVIRONMENT_KEYS}
    out |= {f"{S}.{k}" for k in units.SERVICE_KEYS}
    out |= {f"{P}.{k}" for k in units.PROCESS_KEYS}
    out |= {f"{P}.autoscale.{k}" for k in podsettings.AUTOSCALE_KEYS}
    out |= {f"{S}.volumes.*.{k}" for k in units.VOLUME_KEYS}
    out |= {f"{S}.deploy.{k}" for k in units.DEPLOY_KEYS}
    out |= {f"{S}.kubernetes.{k}" for k in podsettings.KUBERNETES_KEYS}
    out |= {f"{S}.kubernetes.tolerations.{k}" for k in podsettings.TOLERATION_KEYS}
    out |= {f"databases.*.{k}" for k in databases.DATABASE_TABLE_KEYS}
    return out


def test_the_table_walks_every_key_the_validator_accepts() -> None:
    assert sorted(k.path for k in KEYS) == sorted(_accepted())


def _special(key: Key) -> tuple[str, str]:
    """Before and after, for the keys a plain line cannot change."""
    if key.path == f"{S}.image":
        return _toml(BASE), _toml(BASE).replace(
            OTHER, "registry.example.com/shop/other@sha256:" + "c" * 64
        )
    if key.path == f"{P}.type":
        cron = {**BASE, JOBS: 'type = "cron"\nschedule = "0 3 * * *"'}
        return _toml(BASE), _toml(cron)
    return _file(key, key.before), _file(key, key.after)


@pytest.mark.parametrize(
    "key", [k for k in KEYS if k.effect is not Effect.TABLE], ids=lambda k: k.path
)
def test_changing_a_key_is_carried_out(key: Key) -> None:
    before_text, after_text = _special(key)
    before, after = _project(before_text), _project(after_text)
    rendered_before, rendered_after = _rendered(before, key.env), _rendered(after, key.env)
    if key.effect is Effect.MANIFESTS:
        assert rendered_before != rendered_after, f"{key.path} changed no manifest"
    elif key.effect is Effect.METADATA:
        assert rendered_before == rendered_after
        assert before != after
    else:
        assert before.environment(key.env) != after.environment(key.env), key.path
        assert key.proof, f"{key.path}: name the tests that show what it does"
        for proof in key.proof:
            test, _, word = proof.partition("::")
            assert word in (ROOT / test).read_text(encoding="utf-8"), f"{test} has no {word}"
