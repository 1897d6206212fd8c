"""A real Kubernetes 1.20 control plane on loopback: etcd, kube-apiserver and
kube-controller-manager, from the binaries .ci/build-kube caches.

There is no scheduler and no kubelet (tests/infra/kubelet.py plays both), and the API
server's traffic towards pods and nodes goes through the test pod network
(tests/infra/podnetwork.py) rather than anywhere real.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from tests.infra.certs import rsa_key_files
from tests.infra.kuberest import KubeRest, KubeRestError
from tests.infra.podnetwork import PodNetwork
from tests.infra.processes import Process, StartError, free_port

if TYPE_CHECKING:
    import kubernetes.client

CONTEXT = "nebula-test"
# The one identity whose requests the API server writes to its audit log (audit_log below):
# Nebula's ServiceAccount as deploy/kubernetes makes it. Every other request is not logged, so
# the log costs the other tests nothing.
AUDITED_USER = "system:serviceaccount:nebula:nebula"
BUILD_HINT = "run .ci/build-kube (it builds them from Debian's kubernetes source package)"


def kube_cache() -> Path:
    configured = os.environ.get("TEST_KUBE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "nebula-kube"


def find_binaries() -> dict[str, Path]:
    """The three binaries, or StartError naming what is missing and how to get it."""
    bin_dir = kube_cache() / "bin"
    found = {name: bin_dir / name for name in ("kube-apiserver", "kube-controller-manager")}
    missing = [str(p) for p in found.values() if not os.access(p, os.X_OK)]
    if missing:
        raise StartError(
            f"Kubernetes binaries not built: {', '.join(missing)} missing; {BUILD_HINT}"
        )
    etcd = shutil.which("etcd")
    if etcd is None:
        raise StartError("etcd not found on PATH; install Debian's etcd-server")
    found["etcd"] = Path(etcd)
    return found


def write_kubeconfig(path: Path, server: str, ca_path: Path, token: str, context: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": context, "cluster": {"server": server, "certificate-authority": str(ca_path)}}
        ],
        "users": [{"name": f"{context}-admin", "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": f"{context}-admin"}}
        ],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


@dataclass(frozen=True)
class KubeAPI:
    """How a test reaches the API server (the session's kube_api fixture)."""

    kubeconfig: Path
    context: str
    server: str
    token: str
    ca_path: Path
    rest: KubeRest
    network: PodNetwork
    audit_log: Path | None = None  # JSON lines, one per request of AUDITED_USER

    def api_client(self) -> kubernetes.client.ApiClient:
        """A fresh `kubernetes` client built from the kubeconfig file; use it in a `with`."""
        return client_from_kubeconfig(self.kubeconfig, self.context)

    def delete_namespace(self, name: str) -> None:
        """The namespace and everything in it; one that is already gone is fine."""
        try:
            self.rest.delete(f"/api/v1/namespaces/{name}")
        except KubeRestError as exc:
            if exc.status != 404:
                raise


def client_from_kubeconfig(path: Path, context: str) -> kubernetes.client.ApiClient:
    """A `kubernetes` client whose close() also closes its connections.

    The stock ApiClient.close() leaves the urllib3 pool open, and the sockets it drops later
    raise ResourceWarning, which our warnings-are-errors pytest setting turns into failures.
    """
    from kubernetes import client, config

    class ClosingApiClient(client.ApiClient):
        def close(self) -> None:
            super().close()  # type: ignore[no-untyped-call]
            self.rest_client.close()

    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(path),
        context=context,  # type: ignore[no-untyped-call]
        client_configuration=configuration,
    )
    return ClosingApiClient(configuration=configuration)


AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "users": [AUDITED_USER]}, {"level": "None"}],
}


class ControlPlane:
    def __init__(self) -> None:
        self.binaries = find_binaries()
        self.workdir = Path(tempfile.mkdtemp(prefix="nebula-kube-"))
        self.token = secrets.token_hex(24)
        self.network = PodNetwork(self.workdir / "pod-network.sock")
        self.etcd_port = free_port()
        self.api_port = free_port()
        self.processes: list[Process] = []
        self.api: KubeAPI | None = None

    def start(self) -> KubeAPI:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> KubeAPI:
        work = self.workdir
        etcd = Process(
            "etcd",
            [
                str(self.binaries["etcd"]),
                "--name",
                "nebula-test",
                "--data-dir",
                str(work / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{free_port()}",
                "--log-level",
                "warn",
            ],
            work / "etcd.log",
        )
        self.processes.append(etcd)
        etcd.start()
        etcd.wait_ready(lambda: _etcd_healthy(self.etcd_port), 30)

        (work / "tokens.csv").write_text(f"{self.token},admin,admin-uid,system:masters\n")
        rsa_key_files(work / "sa.key", work / "sa.pub")
        (work / "egress.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "apiserver.k8s.io/v1beta1",
                    "kind": "EgressSelectorConfiguration",
                    "egressSelections": [
                        {
                            "name": "cluster",
                            "connection": {
                                "proxyProtocol": "HTTPConnect",
                                "transport": {"uds": {"udsName": str(self.network.socket_path)}},
                            },
                        }
                    ],
                }
            )
        )
        (work / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        certs = work / "certs"
        apiserver = Process(
            "kube-apiserver",
            [
                str(self.binaries["kube-apiserver"]),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--insecure-port=0",
                f"--secure-port={self.api_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={certs}",
                f"--token-auth-file={work / 'tokens.csv'}",
                # RBAC, as on a real cluster: the admin token is in system:masters (allowed
                # everything), and deploy/'s ServiceAccount gets only what its roles grant.
                "--authorization-mode=RBAC",
                f"--audit-policy-file={work / 'audit-policy.yaml'}",
                f"--audit-log-path={work / 'audit.log'}",
                "--audit-log-format=json",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={work / 'sa.pub'}",
                f"--service-account-signing-key-file={work / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--disable-admission-plugins=ServiceAccount",
                f"--egress-selector-config-file={work / 'egress.yaml'}",
                "--kubelet-preferred-address-types=InternalIP",
                # Its own endpoint (127.0.0.1) is refused by Endpoints validation; nothing needs it.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ],
            work / "kube-apiserver.log",
        )
        self.processes.append(apiserver)
        apiserver.start()
        server = f"https://127.0.0.1:{self.api_port}"
        ca_path = certs / "apiserver.crt"
        probe: list[KubeRest] = []

        def ready() -> bool:
            if not ca_path.exists():
                return False
            if not probe:
                # Short timeout: while starting, it accepts connections before it can
                # complete a TLS handshake on them.
                probe.append(KubeRest(server, self.token, ca_path, timeout=1))
            try:
                answer: object = probe[0].get("/readyz")
            except KubeRestError:
                return False
            return answer == "ok"

        try:
            apiserver.wait_ready(ready, 60)
        finally:
            if probe:
                probe[0].close()
        rest = KubeRest(server, self.token, ca_path)

        kubeconfig = work / "kubeconfig"
        write_kubeconfig(kubeconfig, server, ca_path, self.token, CONTEXT)
        manager = Process(
            "kube-controller-manager",
            [
                str(self.binaries["kube-controller-manager"]),
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--port=0",
                "--secure-port=0",
                # No kubelet posts heartbeats, so the node lifecycle controller would evict.
                "--controllers=*,-nodelifecycle",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--profiling=false",
            ],
            work / "kube-controller-manager.log",
        )
        self.processes.append(manager)
        manager.start()
        # The service account controller creating `default` proves the controllers run.
        manager.wait_ready(
            lambda: _exists(rest, "/api/v1/namespaces/default/serviceaccounts/default"), 60
        )
        self.api = KubeAPI(
            kubeconfig, CONTEXT, server, self.token, ca_path, rest, self.network, work / "audit.log"
        )
        return self.api

    def stop_api_server(self) -> None:
        """Only kube-apiserver: its clients find nothing listening (a cluster gone down)."""
        for process in self.processes:
            if process.name == "kube-apiserver":
                process.stop()

    def logs(self) -> dict[str, Path]:
        return {p.name: p.log_path for p in self.processes}

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
        if self.api is not None:
            self.api.rest.close()
        self.network.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _etcd_healthy(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
        health: object = json.load(response).get("health")
        return health == "true"


def _exists(rest: KubeRest, path: str) -> bool:
    try:
        rest.get(path)
    except KubeRestError as exc:
        if exc.status == 404:
            return False
        raise
    return True
