"""What the API server serves, read from its discovery documents, so that manifests are
applied at paths it knows and rendered with API versions it understands.

Kubernetes 1.20 serves Jobs as ``batch/v1`` but CronJobs only as ``batch/v1beta1``; 1.25
serves CronJobs only as ``batch/v1``. The renderer asks ``capabilities()`` (the same data
Helm's ``.Capabilities.APIVersions`` holds); applying and listing ask ``resource()``.

Discovery is read once per cluster and kept: a group version is fetched the first time an
object of it is applied, and a kind the cache does not know triggers one re-read, in case the
server was upgraded since.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from urllib.parse import quote

from reconciler.errors import Blocker, PermanentError
from reconciler.runtimes.kubernetes.transport import JSON, Transport
from renderers.capabilities import Capabilities

# The groups Nebula renders objects of: their kinds go into the capabilities.
RENDERED_GROUPS = (
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "gateway.networking.k8s.io",
)


@dataclass(frozen=True)
class Resource:
    api_version: str  # "v1", "apps/v1", "batch/v1beta1"
    kind: str
    plural: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def collection(self, namespace: str | None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced:
            if not namespace:
                raise PermanentError(
                    f"{self.kind} objects need a namespace", code=Blocker.CONFIGURATION
                )
            return f"{base}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{base}/{self.plural}"

    def item(self, name: str, namespace: str | None) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"


class Discovery:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._lock = threading.Lock()
        self._groups: dict[str, list[str]] | None = None  # group -> versions, preferred first
        self._kinds: dict[str, dict[str, Resource]] = {}  # group version -> kind -> resource
        self._version: str | None = None

    def resource(self, api_version: str, kind: str) -> Resource:
        """Where ``kind`` of ``api_version`` lives; ``configuration`` if it is not served."""
        found = self._kinds_of(api_version).get(kind)
        if found is None:
            self.forget()
            found = self._kinds_of(api_version).get(kind)
        if found is None:
            served = ", ".join(self._versions_serving(kind)) or "no version"
            raise PermanentError(
                f"The cluster does not serve {api_version} {kind} (it serves {served}); "
                "the release was rendered for another Kubernetes version",
                code=Blocker.CONFIGURATION,
            )
        return found

    def serves(self, api_version: str, kind: str) -> bool:
        """Whether the server serves ``kind`` of ``api_version`` (read again once if the cache
        says no: an operator's CRD may have been installed since)."""
        if kind in self._kinds_of(api_version):
            return True
        self.forget()
        return kind in self._kinds_of(api_version)

    def preferred(self, group: str, kind: str) -> Resource | None:
        """The newest served version of ``kind`` in ``group`` (for listing and deleting)."""
        for version in self._served_groups().get(group, []):
            api_version = f"{group}/{version}" if group else version
            found = self._kinds_of(api_version).get(kind)
            if found is not None:
                return found
        return None

    def namespaced_kinds(self) -> list[tuple[str, str]]:
        """(group, kind) of every namespaced kind the cluster serves that can be listed and
        deleted, in its group's preferred version: where raw manifests may have put objects."""
        out: dict[tuple[str, str], None] = {}
        for group, versions in self._served_groups().items():
            for version in versions[:1]:
                api_version = f"{group}/{version}" if group else version
                for resource in self._kinds_of(api_version).values():
                    if resource.namespaced and {"list", "delete"} <= resource.verbs:
                        out[(group, resource.kind)] = None
        return list(out)

    def capabilities(self) -> Capabilities:
        groups = self._served_groups()
        api_versions: set[str] = set()
        for group, versions in groups.items():
            for version in versions:
                api_version = f"{group}/{version}" if group else version
                api_versions.add(api_version)
                if group in RENDERED_GROUPS:
                    api_versions.update(f"{api_version}/{k}" for k in self._kinds_of(api_version))
        return Capabilities(self.kube_version(), frozenset(api_versions))

    def kube_version(self) -> str:
        """ "1.20": major.minor, without a provider's suffix ("20+" on some managed clusters)."""
        if self._version is None:
            info = self._transport.get("/version", what="read the server version") or {}
            major = re.sub(r"\D", "", str(info.get("major", ""))) or "1"
            minor = re.sub(r"\D", "", str(info.get("minor", ""))) or "0"
            self._version = f"{major}.{minor}"
        return self._version

    def forget(self) -> None:
        with self._lock:
            self._groups = None
            self._kinds.clear()

    def _versions_serving(self, kind: str) -> list[str]:
        out = []
        for group in RENDERED_GROUPS:
            for version in self._served_groups().get(group, []):
                api_version = f"{group}/{version}" if group else version
                if kind in self._kinds_of(api_version):
                    out.append(api_version)
        return out

    def _served_groups(self) -> dict[str, list[str]]:
        with self._lock:
            if self._groups is not None:
                return self._groups
        core = self._transport.get("/api", what="discover the core API versions") or {}
        listed = self._transport.get("/apis", what="discover the API groups") or {}
        groups: dict[str, list[str]] = {"": list(core.get("versions") or ["v1"])}
        for group in listed.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v["version"] for v in group.get("versions") or []]
            versions.sort(key=lambda v: (v != preferred, _version_rank(v)))
            groups[group["name"]] = versions
        with self._lock:
            self._groups = groups
        return groups

    def _kinds_of(self, api_version: str) -> dict[str, Resource]:
        with self._lock:
            if api_version in self._kinds:
                return self._kinds[api_version]
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        listed = self._transport.get(
            path, what=f"discover the resources of {api_version}", missing_ok=True
        )
        kinds = _resources(api_version, listed or {})
        with self._lock:
            self._kinds[api_version] = kinds
        return kinds


def _resources(api_version: str, listed: JSON) -> dict[str, Resource]:
    kinds: dict[str, Resource] = {}
    for entry in listed.get("resources") or []:
        name = str(entry.get("name", ""))
        if not name or "/" in name:  # subresources: deployments/scale, pods/log ...
            continue
        kinds[str(entry["kind"])] = Resource(
            api_version,
            str(entry["kind"]),
            name,
            bool(entry.get("namespaced")),
            frozenset(str(v) for v in entry.get("verbs") or ()),
        )
    return kinds


def _version_rank(version: str) -> tuple[int, int, int]:
    """v1 before v1beta2 before v1beta1 before v1alpha1, as Kubernetes orders versions."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (9, 0, 0)
    major, stage, minor = match.groups()
    stage_rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (stage_rank, -int(major), -int(minor or 0))
