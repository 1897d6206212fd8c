"""An environment's pod and route settings (nebula-toml.md "Version 1.2 additions").

``gateway`` and ``ingress_class`` choose how public traffic reaches processes with ``domains``;
``pod_security`` the Pod Security Standard every pod meets; ``image_pull_secrets`` what every
pod pulls with; ``postgres`` whether postgres databases run as Nebula's StatefulSet or as a
CloudNativePG Cluster. Domains are checked here too, against the whole environment: a domain twice,
or domains where nothing routes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reconciler.model.engines import PostgresRunner
from reconciler.model.positions import Path
from reconciler.model.problems import Code, Problems, dotted
from reconciler.model.reading import Locate, Reader
from reconciler.model.specs import EnvironmentConfig, Platform, PodSecurity

PLATFORM_KEYS = (
    "gateway",
    "ingress_class",
    "tls_issuer",
    "pod_security",
    "image_pull_secrets",
    "postgres",
)
# A Kubernetes object name (DNS subdomain) and a namespace (DNS label).
OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z")
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
DOMAIN = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})+\Z")


def read_platform(reader: Reader) -> Platform:
    """The environment's platform keys; problems are reported at the key written."""
    name = reader.path[-1]
    gateway = reader.string("gateway", None, example='"infra/public"')
    if gateway is not None and not _is_gateway(gateway):
        reader.error(
            "gateway",
            Code.INVALID_VALUE,
            f"gateway '{gateway}' is not written namespace/name",
            'name the Gateway and its namespace, e.g. gateway = "infra/public"',
        )
        gateway = None
    ingress_class = _object_name(reader, "ingress_class", '"nginx"')
    if gateway is not None and ingress_class is not None:
        reader.error(
            "ingress_class",
            Code.INVALID_VALUE,
            f"environment '{name}' has both gateway and ingress_class",
            "keep one: gateway for Gateway API routes, ingress_class for Ingresses",
        )
        ingress_class = None
    tls_issuer = _object_name(reader, "tls_issuer", '"letsencrypt"')
    if tls_issuer is not None and ingress_class is None and not reader.has("ingress_class"):
        reader.error(
            "tls_issuer",
            Code.INVALID_VALUE,
            "tls_issuer applies to Ingresses only: this environment has no ingress_class",
            "add ingress_class, or remove tls_issuer (a Gateway's listener holds its own "
            "certificate)",
        )
        tls_issuer = None
    security = reader.choice(
        "pod_security", [p.value for p in PodSecurity], PodSecurity.BASELINE, Code.INVALID_VALUE
    )
    postgres = reader.choice(
        "postgres",
        [p.value for p in PostgresRunner],
        PostgresRunner.STATEFULSET,
        Code.INVALID_VALUE,
    )
    pulls = reader.strings("image_pull_secrets", example='["regcred"]') or ()
    for index, secret in enumerate(pulls):
        if not OBJECT_NAME.match(secret):
            reader.error(
                "image_pull_secrets",
                Code.INVALID_VALUE,
                f"image_pull_secrets[{index}] '{secret}' is not a Secret name",
                "use lowercase letters, digits, '-' and '.', e.g. \"regcred\"",
                index=index,
            )
    return Platform(
        pod_security=PodSecurity(security or PodSecurity.BASELINE),
        image_pull_secrets=tuple(s for s in pulls if OBJECT_NAME.match(s)),
        gateway=gateway,
        ingress_class=ingress_class,
        tls_issuer=tls_issuer,
        postgres=PostgresRunner(postgres or PostgresRunner.STATEFULSET),
    )


def _is_gateway(value: str) -> bool:
    namespace, _, gateway = value.partition("/")
    return bool(NAMESPACE.match(namespace) and OBJECT_NAME.match(gateway))


def _object_name(reader: Reader, key: str, example: str) -> str | None:
    value = reader.string(key, None, example=example)
    if value is not None and not OBJECT_NAME.match(value):
        reader.error(
            key,
            Code.INVALID_VALUE,
            f"{dotted((*reader.path, key))} '{value}' is not a Kubernetes object name",
            f"use lowercase letters, digits, '-' and '.', e.g. {key} = {example}",
        )
        return None
    return value


def check_domain(reader: Reader, index: int, domain: str) -> bool:
    # A host name, not an address: the last label is not all digits (10.0.0.1 is refused).
    if DOMAIN.match(domain) and len(domain) <= 253 and not domain.rsplit(".", 1)[-1].isdigit():
        return True
    reader.error(
        "domains",
        Code.INVALID_VALUE,
        f"domains[{index}] '{domain}' is not a valid lower-case DNS name",
        'write a host name such as "shop.example.com" (a leading "*." is allowed)',
        index=index,
    )
    return False


def check_routes(
    problems: Problems, config: EnvironmentConfig, locates: Mapping[str, Locate]
) -> None:
    """Domains need something to route them, and each is routed once in an environment."""
    seen: dict[str, str] = {}
    env = config.name
    for service in config.services:
        locate = locates[service.name]
        for process in service.processes:
            path: Path = ("services", service.name, "processes", process.name, "domains")
            if process.domains and not config.environment.platform.routed:
                problems.add(
                    locate(path),
                    Code.INVALID_VALUE,
                    f"{service.name}.{process.name} has domains, but environment '{env}' has "
                    "neither gateway nor ingress_class",
                    f'add gateway = "namespace/name" or ingress_class = "..." to '
                    f"[environments.{env}], or remove domains there",
                )
                continue
            if process.domains and not process.primary:
                primary = service.primary_process
                problems.add(
                    locate(path),
                    Code.INVALID_VALUE,
                    f"{service.name}.{process.name} has domains, but public traffic goes to the "
                    f"stable Service '{service.name}', which serves its primary process "
                    f"'{primary.name if primary else '(none)'}'",
                    f"move domains to the primary process, or mark {process.name} primary = true",
                )
                continue
            for index, domain in enumerate(process.domains):
                owner = f"{service.name}.{process.name}"
                if domain in seen:
                    problems.add(
                        locate((*path, index)),
                        Code.DUPLICATE_NAME,
                        f"domain '{domain}' is routed twice in environment '{env}': by "
                        f"{seen[domain]} and {owner}",
                        "route each domain to one process",
                    )
                    continue
                seen[domain] = owner
