"""Fixtures for real infrastructure on loopback: PostgreSQL, a Kubernetes control plane with
a test kubelet and a fault-injecting proxy, and headless Chromium.

Each server starts once per session, on first use. A server that cannot start makes the
tests that need it skip with the reason, unless TEST_REQUIRE_INFRA=1 (set by .ci/run):
then they fail, so CI can never go green by skipping the real thing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.infra.faultproxy import FaultProxy
from tests.infra.kubelet import TestKubelet
from tests.infra.kuberest import KubeRest
from tests.infra.kubeserver import ControlPlane, KubeAPI, write_kubeconfig
from tests.infra.oidcprovider import OpenIDProvider
from tests.infra.postgres import PostgresServer
from tests.infra.processes import StartError

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(what: str, reason: str) -> NoReturn:
    message = f"{what} could not start: {reason}"
    if os.environ.get("TEST_REQUIRE_INFRA") == "1":
        pytest.fail(f"{message}\n(TEST_REQUIRE_INFRA=1: this must work here)", pytrace=False)
    pytest.skip(message)


# -- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server; `.restart()`, `.stop()`, `.start()` for chaos tests."""
    try:
        server = PostgresServer()
    except StartError as exc:
        _unavailable("PostgreSQL", str(exc))
    try:
        server.start()
    except StartError as exc:
        server.close()
        _unavailable("PostgreSQL", str(exc))
    yield server
    server.close()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URL (`postgresql+psycopg://...`) of the session's database."""
    return postgres_server.url()


@pytest.fixture
def fresh_postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A new, empty database for this test alone, dropped afterwards."""
    postgres_server.ensure_running()
    name = f"test_{secrets.token_hex(6)}"
    url = postgres_server.create_database(name)
    yield url
    postgres_server.ensure_running()  # a test may have stopped it
    postgres_server.drop_database(name)


# -- Kubernetes ------------------------------------------------------------------------------

WATCH_THREAD = "nebula-watch"


def _watch_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(WATCH_THREAD))


@pytest.fixture(autouse=True)
def no_watch_thread_left() -> Iterator[None]:
    """Every test closes the clusters it opened: no watch cache's informer outlives it.
    (Autouse, so set up first and torn down last, after the fixtures that close clusters.)"""
    yield
    deadline = time.monotonic() + 10
    while (left := _watch_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], f"watch threads still running after the test: {left}"


@pytest.fixture(scope="session")
def kube_control_plane() -> Iterator[ControlPlane]:
    try:
        plane = ControlPlane()
        plane.start()
    except StartError as exc:
        _unavailable("The Kubernetes API server", str(exc))
    yield plane
    plane.stop()


@pytest.fixture(scope="session")
def kube_api(kube_control_plane: ControlPlane) -> KubeAPI:
    """kubeconfig, context, server, token, CA path, `.rest` and `.api_client()`."""
    assert kube_control_plane.api is not None
    return kube_control_plane.api


@pytest.fixture
def kube_namespace(kube_api: KubeAPI) -> Iterator[str]:
    """A namespace of this test's own, deleted (with everything in it) afterwards."""
    name = f"t-{secrets.token_hex(5)}"
    kube_api.rest.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    kube_api.delete_namespace(name)


@pytest.fixture(scope="session")
def _session_kubelet(kube_api: KubeAPI, kube_control_plane: ControlPlane) -> Iterator[TestKubelet]:
    rest = KubeRest(kube_api.server, kube_api.token, kube_api.ca_path)
    kubelet = TestKubelet(rest, kube_api.network, kube_control_plane.workdir)
    kubelet.start()
    yield kubelet
    kubelet.stop()


@pytest.fixture
def kubelet(_session_kubelet: TestKubelet) -> Iterator[TestKubelet]:
    """The test kubelet, binding and reporting pods in every namespace during this test.

    Script it per image: `kubelet.script(image, Behaviour.IMAGE_PULL)`; unscripted images
    run and become Ready. Scripts are forgotten after the test.
    """
    _session_kubelet.reset()
    _session_kubelet.resume()
    yield _session_kubelet
    _session_kubelet.pause()
    _session_kubelet.reset()


@pytest.fixture(scope="session")
def _session_fault_proxy(kube_api: KubeAPI) -> Iterator[FaultProxy]:
    workdir = Path(tempfile.mkdtemp(prefix="nebula-fault-proxy-"))
    proxy = FaultProxy(kube_api.server, kube_api.ca_path, workdir)
    proxy.kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(proxy.kubeconfig, proxy.server, proxy.ca_path, kube_api.token, proxy.context)
    yield proxy
    proxy.close()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def fault_proxy(_session_fault_proxy: FaultProxy) -> Iterator[FaultProxy]:
    """A proxy in front of the API server (`.kubeconfig`, `.context`, `.api_client()`) that
    fails, hangs or refuses requests on demand; clean at the start and end of each test."""
    _session_fault_proxy.clear()
    yield _session_fault_proxy
    _session_fault_proxy.clear()


# -- An OpenID Provider ----------------------------------------------------------------------


def _provider(device_flow: bool) -> Iterator[OpenIDProvider]:
    what = "The OpenID Provider (node tests/node/oidc-provider.mjs)"
    try:
        provider = OpenIDProvider(device_flow=device_flow)
    except StartError as exc:
        _unavailable(what, str(exc))
    try:
        provider.start()
    except StartError as exc:
        provider.close()
        _unavailable(what, str(exc))
    yield provider
    provider.close()


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OpenIDProvider]:
    """panva's oidc-provider on loopback, with the device authorization grant: Nebula's client
    (``CLIENT_ID``), another client and the users of ``tests.infra.oidcprovider.USERS``."""
    yield from _provider(device_flow=True)


@pytest.fixture(scope="session")
def oidc_provider_without_device() -> Iterator[OpenIDProvider]:
    """The same provider without a device authorization endpoint (the loopback redirect)."""
    yield from _provider(device_flow=False)


# -- Chromium --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Playwright's Browser on Debian's Chromium (Playwright's own download is not used)."""
    if not CHROMIUM.exists():
        _unavailable("Chromium", f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except Error as exc:
            _unavailable("Chromium", str(exc).splitlines()[0])
        yield launched
        launched.close()
