"""Object names and labels (interfaces.md "Kubernetes objects").

Names are built from slugs, so they are valid DNS labels; only their length can exceed what
Kubernetes accepts (63 characters for most names, 52 for a CronJob, whose Jobs append 11).
A longer name keeps a readable prefix and ends in a hash of the whole name, so it is the same
on every render and two long names that share a prefix still differ.
"""

from __future__ import annotations

import hashlib

MAX_NAME = 63
MAX_SECRET_NAME = 253
MAX_CRONJOB_NAME = 52

MANAGED_BY = "app.kubernetes.io/managed-by"
PROJECT = "nebula.dev/project"
ENVIRONMENT = "nebula.dev/environment"
SERVICE = "nebula.dev/service"
RELEASE = "nebula.dev/release"
PROCESS = "nebula.dev/process"

SECRETS = "nebula-secrets"  # the environment's server-side secrets
# The process label of release-command pods: not a slug, so no process of the file can share it.
RELEASE_COMMAND = "release_command"

Labels = tuple[tuple[str, str], ...]


def fit(name: str, limit: int = MAX_NAME) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('-')}-{digest}"


def namespace(project: str, environment: str) -> str:
    return fit(f"{project}-{environment}")


def release_label(number: int) -> str:
    return f"r-{number}"


def deployment(service: str, number: int, process: str, primary: bool) -> str:
    base = f"{service}-r{number}"
    return fit(base if primary else f"{base}-{process}")


def release_service(service: str, number: int) -> str:
    return fit(f"{service}-r{number}")


def variables_configmap(service: str, number: int) -> str:
    return fit(f"{service}-r{number}-vars")


def release_job(service: str, number: int) -> str:
    return fit(f"{service}-r{number}-release")


def cronjob(service: str, number: int, process: str) -> str:
    return fit(f"{service}-r{number}-{process}", MAX_CRONJOB_NAME)


def job(service: str, number: int, process: str) -> str:
    return fit(f"{service}-r{number}-{process}")


def route(service: str, process: str) -> str:
    """An HTTPRoute's or Ingress's: one per process with domains."""
    return fit(f"{service}-{process}")


def volume_claim(service: str, volume: str) -> str:
    return fit(f"{service}-{volume}")


def credentials(database: str) -> str:
    return fit(f"{database}-credentials")


def cloudnative_secret(database: str) -> str:
    """The Secret the CloudNativePG operator writes a Cluster's application credentials to."""
    return f"{database}-app"


def host(unit: str, namespace_name: str) -> str:
    """The stable in-cluster DNS name of a service or database."""
    return f"{unit}.{namespace_name}.svc.cluster.local"


def environment_labels(project: str, environment: str) -> Labels:
    return ((MANAGED_BY, "nebula"), (PROJECT, project), (ENVIRONMENT, environment))


def unit_labels(project: str, environment: str, unit: str) -> Labels:
    return (*environment_labels(project, environment), (SERVICE, unit))


def release_labels(project: str, environment: str, service: str, number: int) -> Labels:
    return (*unit_labels(project, environment, service), (RELEASE, release_label(number)))


POD_SECURITY_MODES = ("enforce", "audit", "warn")


def pod_security_labels(level: str) -> Labels:
    """The namespace labels Pod Security admission reads: every mode at the one level."""
    return tuple((f"pod-security.kubernetes.io/{mode}", level) for mode in POD_SECURITY_MODES)


def with_process(labels: Labels, process: str) -> Labels:
    return (*labels, (PROCESS, process))
