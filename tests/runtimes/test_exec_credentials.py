"""A kubeconfig user with an ``exec`` credential plugin, on the real API server: Nebula runs the
plugin (tests/infra/execplugin.py mints a 10-minute TokenRequest token each run) when a request
needs a token, keeps the token in memory until a minute before its ``expirationTimestamp``,
then runs it again; a plugin that fails is ``delivery`` with the last line of its stderr.

The clock is a fake one started at the wall clock's now (the plugin's expiry is a real time),
so moving it forward shows the refresh without waiting ten minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.clock import FakeClock
from reconciler.errors import ConfigurationError
from reconciler.runtimes import kubernetes
from reconciler.runtimes.cluster import Credentials
from reconciler.runtimes.kubernetes import KubernetesCluster, Timeouts
from tests.infra.execplugin import FAILURE, NAME, ExecPlugin
from tests.infra.kubeserver import KubeAPI

pytestmark = pytest.mark.kube

CONTEXT = "exec-test"
WHO = f"the credential plugin {NAME} of context '{CONTEXT}'"


@pytest.fixture
def plugin(tmp_path: Path, kube_api: KubeAPI) -> ExecPlugin:
    made = ExecPlugin(tmp_path / "plugin", kube_api)
    made.set("mint")
    return made


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC))


def connect(
    plugin: ExecPlugin, clock: FakeClock, tmp_path: Path, timeouts: Timeouts | None = None
) -> KubernetesCluster:
    api = plugin.kube_api
    kubeconfig = plugin.kubeconfig(tmp_path / "kubeconfig", CONTEXT, api.server, api.ca_path)
    return kubernetes.connect(
        CONTEXT, str(kubeconfig), clock=clock, timeouts=timeouts or Timeouts(2.0, 4.0, 10.0)
    )


@pytest.fixture
def cluster(plugin: ExecPlugin, clock: FakeClock, tmp_path: Path) -> Iterator[KubernetesCluster]:
    made = connect(plugin, clock, tmp_path)
    yield made
    made.close()


def test_the_token_is_kept_until_a_minute_before_it_expires_then_the_plugin_runs_again(
    plugin: ExecPlugin,
    cluster: KubernetesCluster,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEBULA_SECRET_KEY", "not-for-plugins")
    assert plugin.runs == 0  # connecting sends nothing, so runs nothing

    about = cluster.describe()
    assert (about.error, about.version, about.credentials) == (None, "v1.20.2", Credentials.EXEC)
    assert plugin.runs == 1
    assert plugin.nebula_variables == ""  # Nebula's settings are not passed on
    # A watch has a client of its own, with the same plugin and the token it gave.
    stream = cluster.transport.stream(
        "/api/v1/namespaces",
        what="watch namespaces",
        query=[("watch", "1"), ("timeoutSeconds", "1")],
        read_timeout=5,
    )
    stream.release_conn()
    stream.close()
    clock.advance(539)  # 600 s to expiry, refreshed 60 s before
    assert cluster.describe().error is None
    assert plugin.runs == 1

    clock.advance(2)
    assert cluster.describe().error is None
    assert plugin.runs == 2


def test_a_token_the_api_server_refuses_is_asked_for_again_at_the_next_request(
    plugin: ExecPlugin, cluster: KubernetesCluster
) -> None:
    plugin.set("garbage")
    refused = cluster.describe().error
    assert refused is not None and "refused our credentials" in refused
    assert "garbage-token" not in refused

    plugin.set("mint")
    assert cluster.describe().error is None
    assert plugin.runs == 2


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("fail", f"exited with status 3: {FAILURE}"),
        ("badjson", "printed no ExecCredential JSON"),
        ("hang", "did not answer within 3s: waiting for the identity provider"),
    ],
)
def test_a_failing_plugin_is_delivery_with_its_last_words_and_is_not_rerun_for_a_while(
    plugin: ExecPlugin, clock: FakeClock, tmp_path: Path, mode: str, said: str
) -> None:
    plugin.set(mode)
    cluster = connect(plugin, clock, tmp_path, Timeouts(2.0, 4.0, plugin=3.0))
    try:
        with pytest.raises(Exception) as failed:
            cluster.capabilities()
        assert getattr(failed.value, "code", None) == "delivery"
        assert str(failed.value) == f"{WHO} {said}"
        assert cluster.describe().error == f"{WHO} {said}"
        assert plugin.runs == 1  # the failure is remembered for a few seconds

        plugin.set("mint")
        clock.advance(6)
        assert cluster.describe().error is None
        assert plugin.runs == 2
    finally:
        cluster.close()


def test_a_plugin_that_is_not_installed_says_how_to_install_it(
    plugin: ExecPlugin, clock: FakeClock, tmp_path: Path
) -> None:
    plugin.script.unlink()
    cluster = connect(plugin, clock, tmp_path)
    try:
        with pytest.raises(Exception) as failed:
            cluster.capabilities()
    finally:
        cluster.close()
    assert str(failed.value) == f"{WHO} could not be run: No such file or directory"


def test_an_exec_section_nebula_cannot_use_is_a_configuration_error(
    plugin: ExecPlugin, clock: FakeClock, tmp_path: Path
) -> None:
    kubeconfig = plugin.kubeconfig(
        tmp_path / "kubeconfig", CONTEXT, "https://127.0.0.1:1", tmp_path
    )
    kubeconfig.write_text(
        kubeconfig.read_text().replace(
            "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1alpha1"
        )
    )
    with pytest.raises(ConfigurationError) as refused:
        kubernetes.connect(CONTEXT, str(kubeconfig), clock=clock)
    assert str(refused.value) == (
        f"user '{CONTEXT}-exec': exec apiVersion 'client.authentication.k8s.io/v1alpha1' is not "
        "one Nebula speaks"
    )
