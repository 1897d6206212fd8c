"""What the target cluster serves, so manifests use API versions it understands.

Modelled on Helm's ``.Capabilities.APIVersions``: a set holding both ``group/version`` and
``group/version/Kind`` entries, because a cluster may serve a group version without every kind
in it (Kubernetes 1.20 serves ``batch/v1`` Jobs but CronJobs only as ``batch/v1beta1``).
The reconciler builds one from the cluster's discovery; offline rendering uses a preset.
"""

from __future__ import annotations

from dataclasses import dataclass

LATEST = "latest"


@dataclass(frozen=True)
class Capabilities:
    kube_version: str  # "1.20", or LATEST for the newest schemas this installation carries
    api_versions: frozenset[str]

    def has(self, api_version: str) -> bool:
        """``has("batch/v1")`` or, more precisely, ``has("batch/v1/CronJob")``."""
        return api_version in self.api_versions

    @property
    def cronjob_api_version(self) -> str:
        # batch/v1 CronJob arrived in 1.21; batch/v1beta1 was removed in 1.25.
        return "batch/v1" if self.has("batch/v1/CronJob") else "batch/v1beta1"

    @property
    def pdb_api_version(self) -> str:
        # policy/v1 arrived in 1.21; policy/v1beta1 was removed in 1.25.
        return "policy/v1" if self.has("policy/v1/PodDisruptionBudget") else "policy/v1beta1"

    @property
    def hpa_api_version(self) -> str:
        # autoscaling/v2 arrived in 1.23; v2beta2 (the same fields we render) was removed in 1.26.
        if self.has("autoscaling/v2/HorizontalPodAutoscaler"):
            return "autoscaling/v2"
        return "autoscaling/v2beta2"

    @property
    def label(self) -> str:
        return (
            "the newest Kubernetes"
            if self.kube_version == LATEST
            else f"Kubernetes {self.kube_version}"
        )


def _served(*kinds: str) -> frozenset[str]:
    """Each ``group/version/Kind`` (``v1/Kind`` for the core group) and its group version."""
    return frozenset({*kinds, *(k.rsplit("/", 1)[0] for k in kinds)})


_CORE = (
    "v1/Namespace",
    "v1/Service",
    "v1/ConfigMap",
    "v1/Secret",
    "v1/PersistentVolumeClaim",
    "apps/v1/Deployment",
    "apps/v1/StatefulSet",
    "batch/v1/Job",
    "networking.k8s.io/v1/Ingress",
    # A CRD (Gateway API v1), served wherever it is installed, whatever the Kubernetes version.
    "gateway.networking.k8s.io/v1/HTTPRoute",
)

KUBERNETES_1_20 = Capabilities(
    "1.20",
    _served(
        *_CORE,
        "batch/v1beta1/CronJob",
        "policy/v1beta1/PodDisruptionBudget",
        "autoscaling/v2beta2/HorizontalPodAutoscaler",
    ),
)
RECENT = Capabilities(
    LATEST,
    _served(
        *_CORE,
        "batch/v1/CronJob",
        "policy/v1/PodDisruptionBudget",
        "autoscaling/v2/HorizontalPodAutoscaler",
    ),
)

PRESETS = {"1.20": KUBERNETES_1_20, LATEST: RECENT}


def preset(name: str) -> Capabilities:
    """A named preset (``nebula render --kube-version``); KeyError for an unknown name."""
    return PRESETS[name]
