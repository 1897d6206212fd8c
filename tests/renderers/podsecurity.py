"""The Pod Security Standards' ``restricted`` profile, as rules over a pod spec.

Written from https://kubernetes.io/docs/concepts/security/pod-security-standards/ (every
baseline control plus the restricted ones), because the test API server (1.20) has no Pod
Security admission. Each rule returns what it found wrong, in the words of the standard.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

ALLOWED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
}


def pod_spec(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    spec = manifest.get("spec") or {}
    if manifest.get("kind") == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template = spec.get("template")
    return template["spec"] if template else None


def _containers(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from pod.get("initContainers") or ()
    yield from pod.get("containers") or ()


def violations(pod: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    context = pod.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            found.append(f"host namespaces: {field}")
    for volume in pod.get("volumes") or ():
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            found.append(f"volume types: {volume['name']} is {sorted(kinds)}")
    for sysctl in context.get("sysctls") or ():
        if sysctl["name"] not in SAFE_SYSCTLS:
            found.append(f"sysctls: {sysctl['name']}")
    pod_non_root = context.get("runAsNonRoot") is True
    pod_seccomp = (context.get("seccompProfile") or {}).get("type")
    if context.get("runAsUser") == 0:
        found.append("running as non-root user: pod runAsUser 0")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        found.append(f"seccomp: pod profile {pod_seccomp}")
    for c in _containers(pod):
        name = c["name"]
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            found.append(f"privileged: {name}")
        if any(p.get("hostPort") for p in c.get("ports") or ()):
            found.append(f"host ports: {name}")
        if sc.get("procMount") not in (None, "Default"):
            found.append(f"/proc mount type: {name}")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"privilege escalation: {name} does not set it false")
        if not (pod_non_root or sc.get("runAsNonRoot") is True):
            found.append(f"running as non-root: {name}")
        if sc.get("runAsNonRoot") is False or sc.get("runAsUser") == 0:
            found.append(f"running as non-root user: {name}")
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"seccomp: {name} has {seccomp}")
        capabilities = sc.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            found.append(f"capabilities: {name} does not drop ALL")
        if set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}:
            found.append(f"capabilities: {name} adds {capabilities['add']}")
    return found
