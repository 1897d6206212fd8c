"""The 1.2 keys of pods and public traffic: what they read into, and each validation error
nebula-toml.md "Version 1.2 additions" lists, at the line and column written, with a hint."""

from __future__ import annotations

import pytest

from reconciler.model import validation
from reconciler.model.specs import Autoscale, PodSecurity, ProcessSpec, Toleration
from tests.model import samples

IMAGE = f"registry.example.com/shop/api@{samples.DIGEST}"


def _file(environment: str = "", process: str = "", kubernetes: str = "", extra: str = "") -> str:
    return f"""\
[environments.production]
{environment}
[services.api]
image = "{IMAGE}"

[services.api.processes.web]
type = "http"
port = 8000
{process}
[services.api.processes.worker]
type = "worker"

[services.api.kubernetes]
{kubernetes}
{extra}"""


def _problems(text: str) -> list[tuple[str, str]]:
    _, problems = validation.check(text, "nebula.toml")
    assert all(p.hint for p in problems), "every problem says how to fix it"
    return [(f"{p.location.line}:{p.location.col}", p.message) for p in problems]


def _web(text: str) -> ProcessSpec:
    config = samples.valid(text).environment("production")
    assert config is not None
    service = config.service("api")
    assert service is not None
    return service.processes[0]


def test_every_new_key_reads_into_the_effective_configuration() -> None:
    text = _file(
        environment='gateway = "infra/public"\npod_security = "restricted"\n'
        'image_pull_secrets = ["regcred"]',
        process='domains = ["shop.example.com", "*.shop.example.com"]\n'
        'liveness_path = "/livez"\ncpu = "750m"\nmemory = "1536Mi"\n'
        "autoscale = { min = 2, max = 10, cpu_percent = 70 }\n"
        'shutdown_grace = "45s"',
        kubernetes='service_account = "api"\n'
        'node_selector = { "kubernetes.io/arch" = "amd64" }\n'
        'tolerations = [{ key = "dedicated", operator = "Equal", value = "web", '
        'effect = "NoSchedule" }]\n'
        'annotations = { "example.com/team" = "payments" }\n'
        'labels = { "team" = "payments" }',
    )
    config = samples.valid(text).environment("production")
    assert config is not None
    service = config.service("api")
    assert service is not None
    web = service.processes[0]
    assert (web.cpu_request, web.memory_request, web.liveness_path) == ("750m", "1536Mi", "/livez")
    assert web.autoscale == Autoscale(2, 10, 70)
    assert (web.least_replicas, web.shutdown_grace_seconds) == (2, 45)
    assert web.domains == ("shop.example.com", "*.shop.example.com")
    assert service.platform.pod_security is PodSecurity.RESTRICTED
    assert service.platform.image_pull_secrets == ("regcred",)
    assert service.kubernetes.service_account == "api"
    assert service.kubernetes.tolerations == (
        Toleration("dedicated", "Equal", "web", "NoSchedule"),
    )
    assert service.kubernetes.labels == (("team", "payments"),)
    assert service.public_urls == ("https://shop.example.com", "https://*.shop.example.com")


def test_defaults_keep_what_1_1_rendered() -> None:
    web = _web(_file())
    assert (web.cpu_request, web.memory_request) == ("250m", "512Mi")  # instance_size small
    assert (web.autoscale, web.liveness_path, web.shutdown_grace_seconds) == (None, None, 30)


def test_an_ingress_without_tls_publishes_http_urls() -> None:
    text = _file(environment='ingress_class = "nginx"', process='domains = ["shop.example.com"]')
    config = samples.valid(text).environment("production")
    assert config is not None
    service = config.service("api")
    assert service is not None
    assert service.public_urls == ("http://shop.example.com",)


def test_kubernetes_settings_are_overridden_per_environment() -> None:
    text = _file(kubernetes='service_account = "api"') + (
        '\n[services.api.environments.production.kubernetes]\nservice_account = "api-prod"\n'
    )
    config = samples.valid(text).environment("production")
    assert config is not None
    service = config.service("api")
    assert service is not None
    assert service.kubernetes.service_account == "api-prod"


BAD = [
    (
        "not a DNS name",
        _file(environment='gateway = "infra/public"', process='domains = ["Shop.Example.com"]'),
        ("9:12", "domains[0] 'Shop.Example.com' is not a valid lower-case DNS name"),
    ),
    (
        "an IP address for a domain",
        _file(environment='gateway = "infra/public"', process='domains = ["10.0.0.1"]'),
        ("9:12", "domains[0] '10.0.0.1' is not a valid lower-case DNS name"),
    ),
    (
        "no cpu at all",
        _file(process='cpu = "0"'),
        ("9:7", "services.api.processes.web.cpu is '0', which is not a cpu quantity"),
    ),
    (
        "the same domain twice",
        _file(
            environment='gateway = "infra/public"',
            process='domains = ["shop.example.com", "shop.example.com"]',
        ),
        (
            "9:32",
            "domain 'shop.example.com' is routed twice in environment 'production': by api.web "
            "and api.web",
        ),
    ),
    (
        "domains where nothing routes",
        _file(process='domains = ["shop.example.com"]'),
        (
            "9:11",
            "api.web has domains, but environment 'production' has neither gateway nor "
            "ingress_class",
        ),
    ),
    (
        "gateway and ingress_class",
        _file(environment='gateway = "infra/public"\ningress_class = "nginx"'),
        ("3:17", "environment 'production' has both gateway and ingress_class"),
    ),
    (
        "gateway not namespace/name",
        _file(environment='gateway = "public"'),
        ("2:11", "gateway 'public' is not written namespace/name"),
    ),
    (
        "tls_issuer without ingress_class",
        _file(environment='gateway = "infra/public"\ntls_issuer = "letsencrypt"'),
        ("3:14", "tls_issuer applies to Ingresses only: this environment has no ingress_class"),
    ),
    (
        "unknown pod_security",
        _file(environment='pod_security = "strict"'),
        (
            "2:16",
            "environments.production.pod_security is 'strict', which is not one of: baseline, "
            "restricted",
        ),
    ),
    (
        "cpu with instance_size",
        _file(process='cpu = "750m"\ninstance_size = "large"'),
        ("9:7", "cpu is set together with instance_size"),
    ),
    (
        "malformed cpu",
        _file(process='cpu = "750 millicores"'),
        (
            "9:7",
            "services.api.processes.web.cpu is '750 millicores', which is not a cpu quantity",
        ),
    ),
    (
        "malformed memory",
        _file(process='memory = "1.5G"'),
        ("9:10", "services.api.processes.web.memory is '1.5G', which is not a memory quantity"),
    ),
    (
        "autoscale with replicas",
        _file(process="replicas = 3\nautoscale = { min = 2, max = 4 }"),
        ("10:13", "autoscale is set together with replicas"),
    ),
    (
        "autoscale min above max",
        _file(process="autoscale = { min = 5, max = 4 }"),
        ("9:21", "services.api.processes.web.autoscale: min (5) is more than max (4)"),
    ),
    (
        "autoscale min below 1",
        _file(process="autoscale = { min = 0, max = 4 }"),
        ("9:21", "services.api.processes.web.autoscale.min is 0; it must be between 1 and 1000"),
    ),
    (
        "cpu_percent out of range",
        _file(process="autoscale = { min = 1, max = 4, cpu_percent = 101 }"),
        (
            "9:47",
            "services.api.processes.web.autoscale.cpu_percent is 101; it must be between 1 and 100",
        ),
    ),
    (
        "liveness_path without a slash",
        _file(process='liveness_path = "livez"'),
        ("9:17", "liveness_path 'livez' must start with '/'"),
    ),
    (
        "a reserved label",
        _file(kubernetes='labels = { "app.kubernetes.io/name" = "x" }'),
        (
            "14:12",
            "'app.kubernetes.io/name' in services.api.kubernetes.labels uses a prefix Nebula "
            "reserves (nebula.dev/, app.kubernetes.io/)",
        ),
    ),
    (
        "a reserved annotation",
        _file(kubernetes='annotations = { "nebula.dev/x" = "y" }'),
        (
            "14:17",
            "'nebula.dev/x' in services.api.kubernetes.annotations uses a prefix Nebula reserves "
            "(nebula.dev/, app.kubernetes.io/)",
        ),
    ),
    (
        "an unknown toleration effect",
        _file(kubernetes='tolerations = [{ key = "k", effect = "NoRun" }]'),
        (
            "14:38",
            "services.api.kubernetes.tolerations[0].effect is 'NoRun', which is not one of: "
            "NoSchedule, PreferNoSchedule, NoExecute",
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_each_mistake_is_one_error_at_the_key_written(
    text: str, expected: tuple[str, str] | None
) -> None:
    found = _problems(text)
    assert len(found) == 1, found
    if expected is not None:
        assert found == [expected]


def test_domains_on_a_worker_say_http_only() -> None:
    text = _file(environment='gateway = "infra/public"').replace(
        'type = "worker"\n', 'type = "worker"\ndomains = ["a.example.com"]\n'
    )
    assert _problems(text) == [("12:11", "domains apply to http processes only, not worker")]


def test_autoscale_on_a_cron_process_is_refused() -> None:
    text = _file(
        extra='[services.api.processes.nightly]\ntype = "cron"\nschedule = "0 3 * * *"\n'
        "autoscale = { min = 1, max = 2 }\n"
    )
    assert _problems(text) == [("18:13", "a cron process cannot autoscale")]
