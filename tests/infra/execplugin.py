"""A kubeconfig ``exec`` credential plugin for tests, as a real cloud's would be: a Python script
that mints a service account token from the API server (TokenRequest, 10 minutes) each time
it runs, and answers an ``ExecCredential`` with its ``expirationTimestamp``.

The test steers it through files beside the script: ``mode`` (``mint``, ``garbage``: a token
the API server refuses, ``fail``: exits 3 with two lines on stderr, ``hang``: sleeps, ``badjson``),
``lifetime`` (seconds until the expiry it reports; the token itself lives 10 minutes) and
reads ``runs``, the number of times it ran (and ``nebula-variables``, the ``NEBULA_*``
variables it was given). The admin token it mints with reaches it through
the kubeconfig's ``env``, like a cloud CLI's own credentials.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from tests.infra.kubeserver import KubeAPI

NAME = "token-plugin"
NAMESPACE = "default"
SERVICE_ACCOUNT = "default"
FAILURE = "error: the identity provider refused: account locked"
JWT_PREFIX = b"eyJ"  # every service account token starts so (base64 of '{"')

SCRIPT = r"""
import datetime, json, os, ssl, sys, time, urllib.request

here = os.path.dirname(os.path.abspath(__file__))

def read(name, default):
    try:
        with open(os.path.join(here, name)) as f:
            return f.read().strip() or default
    except FileNotFoundError:
        return default

runs = int(read("runs", "0")) + 1
with open(os.path.join(here, "runs"), "w") as f:
    f.write(str(runs))
with open(os.path.join(here, "nebula-variables"), "w") as f:
    f.write(" ".join(sorted(k for k in os.environ if k.startswith("NEBULA_"))))
mode = read("mode", "mint")
request = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
if mode == "fail":
    print("asking the identity provider for a token", file=sys.stderr)
    print(FAILURE, file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    print("waiting for the identity provider", file=sys.stderr, flush=True)
    time.sleep(60)
if mode == "badjson":
    print("token: not-json")
    sys.exit(0)
if mode == "garbage":
    token = "garbage-token-%d" % runs
else:
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "spec": {"expirationSeconds": 600}}).encode()
    url = "%s/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
        os.environ["TEST_SERVER"], NAMESPACE, SERVICE_ACCOUNT)
    mint = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": "Bearer " + os.environ["TEST_ADMIN_TOKEN"],
        "Content-Type": "application/json"})
    tls = ssl.create_default_context(cafile=os.environ["TEST_CA"])
    with urllib.request.urlopen(mint, context=tls, timeout=10) as answer:
        token = json.load(answer)["status"]["token"]
lifetime = int(read("lifetime", "600"))
expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
print(json.dumps({"apiVersion": request["apiVersion"], "kind": "ExecCredential", "status": {
    "token": token, "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}}))
"""


class ExecPlugin:
    """The script in ``directory``, and the kubeconfig user that runs it."""

    def __init__(self, directory: Path, kube_api: KubeAPI) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.script = directory / NAME
        constants = f"#!{sys.executable}\nNAMESPACE = {NAMESPACE!r}\n"
        constants += f"SERVICE_ACCOUNT = {SERVICE_ACCOUNT!r}\nFAILURE = {FAILURE!r}\n"
        self.script.write_text(constants + SCRIPT)
        self.script.chmod(0o755)
        self.kube_api = kube_api
        self._grant(kube_api)

    @staticmethod
    def _grant(kube_api: KubeAPI) -> None:
        """The test API server authorizes with RBAC: the account the plugin signs in as may
        do anything there (what it may do is not what these tests are about)."""
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "nebula-exec-plugin-test"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
            ],
        }
        kube_api.rest.put(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/nebula-exec-plugin-test",
            binding,
        )

    def set(self, mode: str = "mint", lifetime: int = 600) -> None:
        (self.directory / "mode").write_text(mode)
        (self.directory / "lifetime").write_text(str(lifetime))

    @property
    def nebula_variables(self) -> str:
        """The ``NEBULA_*`` variables its last run saw."""
        return (self.directory / "nebula-variables").read_text()

    @property
    def runs(self) -> int:
        path = self.directory / "runs"
        return int(path.read_text()) if path.exists() else 0

    def user(self) -> dict[str, Any]:
        """A kubeconfig ``user`` whose only credential is this plugin."""
        api = self.kube_api
        return {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": str(self.script),
                "env": [
                    {"name": "TEST_SERVER", "value": api.server},
                    {"name": "TEST_ADMIN_TOKEN", "value": api.token},
                    {"name": "TEST_CA", "value": str(api.ca_path)},
                ],
                "interactiveMode": "Never",
            }
        }

    def kubeconfig(self, path: Path, context: str, server: str, ca_path: Path) -> Path:
        """A kubeconfig with one context, ``context``, signing in through the plugin."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": context,
                    "cluster": {"server": server, "certificate-authority": str(ca_path)},
                }
            ],
            "users": [{"name": f"{context}-exec", "user": self.user()}],
            "contexts": [
                {"name": context, "context": {"cluster": context, "user": f"{context}-exec"}}
            ],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path
