"""Which objects a release, a service, an environment and a database consist of.

Each function returns drafts (template + values) in the order they are meant to be applied;
names and labels follow interfaces.md "Kubernetes objects". Nothing here renders text.
"""

from __future__ import annotations

import base64
from typing import Any

from reconciler.model.specs import ProcessSpec, ProcessType
from renderers import naming, pods, scaling, traffic, variables
from renderers.capabilities import Capabilities
from renderers.manifests import Draft
from renderers.naming import Labels
from renderers.releases import EnvironmentUnit, ReleaseSpec
from renderers.secrets import Placeholders, SecretSource, Sensitive


def meta(name: str, namespace: str | None, labels: Labels, **values: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": labels, **values}


def release(spec: ReleaseSpec, capabilities: Capabilities) -> list[Draft]:
    """The objects of release N: variables, release Job, processes and the release's Service."""
    service, number, scope = spec.service, spec.number, spec.scope
    namespace = scope.namespace
    labels = naming.release_labels(scope.project, scope.environment, service.name, number)
    plan = variables.plan(spec)
    drafts: list[Draft] = []
    configmap = naming.variables_configmap(service.name, number) if plan.literals else None
    if configmap is not None:
        drafts.append(
            Draft(
                "ConfigMap",
                configmap,
                "configmap.j2",
                meta(configmap, namespace, labels, data=plan.literals),
            )
        )
    mounts, claims = pods.volumes(service)
    shared = pods.Environment(configmap, plan.env, mounts, claims)
    if service.release_command is not None:
        name = naming.release_job(service.name, number)
        drafts.append(
            Draft(
                "Job",
                name,
                "job.j2",
                meta(
                    name,
                    namespace,
                    naming.with_process(labels, naming.RELEASE_COMMAND),
                    backoff_limit=0,
                    deadline_seconds=service.release_command_timeout,
                    pod=pods.release_command_pod(service, labels, shared),
                ),
            )
        )
    for process in service.processes:
        drafts.append(_process(spec, process, labels, shared, capabilities))
        drafts += _keepers(spec, process, labels, capabilities)
    primary = service.primary_process
    if primary is not None and primary.port is not None:
        name = naming.release_service(service.name, number)
        selector = naming.with_process(_selector(labels), primary.name)
        drafts.append(
            service_draft(name, namespace, labels, selector, pods.port_name(primary), primary.port)
        )
    return drafts


def _keepers(
    spec: ReleaseSpec, process: ProcessSpec, labels: Labels, capabilities: Capabilities
) -> list[Draft]:
    """The process's PodDisruptionBudget and autoscaler, if it has them."""
    if not process.type.is_long_running:
        return []
    name = naming.deployment(spec.service.name, spec.number, process.name, process.primary)
    own = naming.with_process(labels, process.name)
    selector = naming.with_process(_selector(labels), process.name)
    namespace = spec.scope.namespace
    found = (
        scaling.budget(
            process,
            name,
            namespace,
            own,
            selector,
            capabilities,
            hardened=spec.service.platform.hardened,
        ),
        scaling.autoscaler(process, name, namespace, own, capabilities),
    )
    return [draft for draft in found if draft is not None]


def _selector(labels: Labels) -> Labels:
    """The labels that tell one release's pods apart inside a namespace."""
    return tuple((k, v) for k, v in labels if k in (naming.SERVICE, naming.RELEASE))


def _process(
    spec: ReleaseSpec,
    process: ProcessSpec,
    labels: Labels,
    shared: pods.Environment,
    capabilities: Capabilities,
) -> Draft:
    service, number, namespace = spec.service, spec.number, spec.scope.namespace
    pod = pods.process_pod(service, process, labels, shared)
    object_labels = naming.with_process(labels, process.name)
    if process.type.is_long_running:
        name = naming.deployment(service.name, number, process.name, process.primary)
        selector = naming.with_process(_selector(labels), process.name)
        values = meta(
            name,
            namespace,
            object_labels,
            replicas=process.least_replicas,
            autoscaled=process.autoscale is not None,
            min_ready_seconds=process.stabilization_seconds,
            selector=selector,
            pod=pod,
        )
        return Draft("Deployment", name, "deployment.j2", values)
    if process.type is ProcessType.CRON:
        name = naming.cronjob(service.name, number, process.name)
        values = meta(
            name,
            namespace,
            object_labels,
            api_version=capabilities.cronjob_api_version,
            schedule=process.schedule or "",
            selector=pod.labels,
            pod=pod,
        )
        return Draft("CronJob", name, "cronjob.j2", values)
    name = naming.job(service.name, number, process.name)
    values = meta(
        name, namespace, object_labels, backoff_limit=None, deadline_seconds=None, pod=pod
    )
    return Draft("Job", name, "job.j2", values)


def service_draft(
    name: str, namespace: str, labels: Labels, selector: Labels, port_name: str, port: int
) -> Draft:
    values = meta(name, namespace, labels, selector=selector, port_name=port_name, port=port)
    return Draft("Service", name, "service.j2", values)


def service(spec: ReleaseSpec) -> list[Draft]:
    """Per-service objects: volume claims and the stable Service, pointed at release ``spec``.

    Activation later moves the stable Service by patching its ``nebula.dev/release`` selector.
    """
    svc, scope = spec.service, spec.scope
    namespace = scope.namespace
    labels = naming.unit_labels(scope.project, scope.environment, svc.name)
    drafts: list[Draft] = []
    for volume in svc.volumes:
        name = naming.volume_claim(svc.name, volume.name)
        drafts.append(
            Draft(
                "PersistentVolumeClaim",
                name,
                "pvc.j2",
                meta(name, namespace, labels, size=volume.size),
            )
        )
    primary = svc.primary_process
    if primary is not None and primary.port is not None:
        release_labels = naming.release_labels(
            scope.project, scope.environment, svc.name, spec.number
        )
        selector = naming.with_process(_selector(release_labels), primary.name)
        drafts.append(
            service_draft(
                svc.name, namespace, labels, selector, pods.port_name(primary), primary.port
            )
        )
    drafts += traffic.routes(svc, namespace, labels)
    return drafts


def environment(unit: EnvironmentUnit, secrets: SecretSource) -> list[Draft]:
    scope = unit.scope
    labels = naming.environment_labels(scope.project, scope.environment)
    admission = naming.pod_security_labels(unit.pod_security.value)
    drafts = [
        Draft(
            "Namespace",
            scope.namespace,
            "namespace.j2",
            meta(scope.namespace, None, (*labels, *admission)),
        )
    ]
    if unit.secret_names:
        data = tuple((name, secrets.secret(name)) for name in unit.secret_names)
        drafts.append(secret_draft(naming.SECRETS, scope.namespace, labels, data, secrets))
    return drafts


def secret_draft(
    name: str,
    namespace: str,
    labels: Labels,
    data: tuple[tuple[str, str], ...],
    source: SecretSource | Sensitive | Placeholders,
) -> Draft:
    if isinstance(source, Placeholders):
        values = meta(name, namespace, labels, placeholders=True, data=data)
    else:
        encoded = tuple((k, base64.b64encode(v.encode()).decode("ascii")) for k, v in data)
        values = meta(name, namespace, labels, placeholders=False, data=encoded)
    return Draft("Secret", name, "secret.j2", values)
