"""Errors at the edge: the API's answers and the network's failures become our errors, and
credentials never reach a message. Also: connecting, which needs no API server."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from reconciler.errors import (
    ConfigurationError,
    NebulaError,
    PermanentError,
    TransientError,
    UnreachableError,
)
from reconciler.runtimes.kubernetes import Timeouts, connect, failures
from tests.infra.kubeserver import write_kubeconfig
from tests.runtimes.releases import Service, image, release_objects

TOKEN = "abc123-the-token"
redact = failures.Redactor([TOKEN, f"Bearer {TOKEN}"])


def status_body(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}
    ).encode()


def error(
    code: int, message: str = "nope", reason: str = "Whatever", **options: object
) -> NebulaError:
    return failures.from_status(
        code,
        status_body(code, reason, message),
        what="apply Deployment/api-r3",
        blocker=None,
        redact=redact,
        **options,
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "kind", "error_code"),
    [
        (500, TransientError, "transient"),
        (503, TransientError, "transient"),
        (504, TransientError, "transient"),
        (409, TransientError, "transient"),
        (429, TransientError, "transient"),
        (400, PermanentError, "configuration"),
        (422, PermanentError, "configuration"),
        (403, PermanentError, "permanent"),
        (401, UnreachableError, "delivery"),
    ],
)
def test_statuses(code: int, kind: type[NebulaError], error_code: str) -> None:
    found = error(code)

    assert type(found) is kind
    assert found.code == error_code
    assert getattr(found, "status", None) == code


def test_a_quota_refusal_is_capacity_whatever_the_stage() -> None:
    found = failures.from_status(
        403,
        status_body(
            403,
            "Forbidden",
            'persistentvolumeclaims "data" is forbidden: exceeded '
            "quota: storage, requested: requests.storage=5Gi",
        ),
        what="apply PersistentVolumeClaim/api-data",
        blocker=None,
        redact=redact,
    )

    assert isinstance(found, PermanentError) and found.code == "capacity"


def test_a_refusal_names_the_request_and_the_servers_words() -> None:
    found = error(
        422,
        'Deployment.apps "api-r3" is invalid: spec.replicas: Invalid value: -1',
        reason="Invalid",
    )

    assert str(found) == (
        "Kubernetes API refused to apply Deployment/api-r3: 422 Invalid: "
        'Deployment.apps "api-r3" is invalid: spec.replicas: Invalid value: -1'
    )


def test_a_secrets_refusal_keeps_only_field_names() -> None:
    body = json.dumps(
        {
            "kind": "Status",
            "code": 422,
            "reason": "Invalid",
            "message": 'Secret "s" is invalid: data[PASSWORD]: Invalid value: "hunter2"',
            "details": {"causes": [{"field": "data[PASSWORD]"}]},
        }
    )

    found = failures.from_status(
        422, body, what="apply Secret/s", blocker=None, redact=redact, sensitive=True
    )

    assert "hunter2" not in str(found)
    assert (
        str(found)
        == "Kubernetes API refused to apply Secret/s: 422 Invalid: invalid fields: data[PASSWORD]"
    )


def test_credentials_and_long_messages_are_cut() -> None:
    found = error(500, f"proxy said Authorization: Bearer {TOKEN} and token {TOKEN}, " + "x" * 500)

    assert TOKEN not in str(found)
    assert len(str(found)) == failures.MAX_MESSAGE and str(found).endswith("...")


def test_bearer_tokens_are_cut_even_when_unknown() -> None:
    assert (
        redact("header Authorization: Bearer eyJhbGciOi.xyz") == "header Authorization: Bearer ***"
    )


@pytest.mark.parametrize(
    ("raised", "kind", "words"),
    [
        (
            urllib3.exceptions.MaxRetryError(
                None,
                "/api",
                urllib3.exceptions.NewConnectionError(  # type: ignore[arg-type]
                    None, "Failed to establish a new connection: [Errno 111] Connection refused"
                ),
            ),  # type: ignore[arg-type]
            UnreachableError,
            "[Errno 111] Connection refused",
        ),
        (
            urllib3.exceptions.MaxRetryError(
                None,
                "/api",
                urllib3.exceptions.ReadTimeoutError(  # type: ignore[arg-type]
                    None, "/api", "Read timed out."
                ),
            ),  # type: ignore[arg-type]
            TransientError,
            "did not answer in time",
        ),
        (
            urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError()),
            UnreachableError,
            "Connection aborted. (ConnectionResetError)",
        ),
        (
            ApiException(
                status=0,
                reason="SSLError\n[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed",
            ),
            UnreachableError,
            "SSLError",
        ),
        (ApiException(status=503, reason="Service Unavailable"), TransientError, "503"),
    ],
)
def test_exceptions(raised: Exception, kind: type[NebulaError], words: str) -> None:
    found = failures.from_exception(raised, what="list pods", blocker=None, redact=redact)

    assert type(found) is kind
    assert words in str(found)
    assert "0x" not in str(found)


# -- connecting ------------------------------------------------------------------------------


def test_no_kubeconfig_outside_a_cluster(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as failed:
        connect(environ={"KUBECONFIG": str(tmp_path / "missing")})

    assert str(failed.value) == (
        f"no kubeconfig at {tmp_path / 'missing'}, and Nebula is not running inside a cluster"
    )


def test_an_unknown_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    write_kubeconfig(kubeconfig, "https://127.0.0.1:1", tmp_path / "ca.crt", TOKEN, "staging")

    with pytest.raises(ConfigurationError) as failed:
        connect("production", str(kubeconfig))

    assert str(failed.value).startswith(
        f"cannot use context 'production' of the kubeconfig {kubeconfig}"
    )
    assert TOKEN not in str(failed.value)


def test_in_a_cluster_without_a_service_account() -> None:
    with pytest.raises(ConfigurationError) as failed:
        connect(environ={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"})

    assert str(failed.value).startswith(
        "Nebula runs in a cluster but cannot read its service account"
    )


def test_a_dead_api_server_is_unreachable(tmp_path: Path) -> None:
    with socket.socket() as placeholder:  # a port nothing listens on
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    kubeconfig = tmp_path / "config"
    (tmp_path / "ca.crt").write_text("")
    write_kubeconfig(kubeconfig, f"https://127.0.0.1:{port}", tmp_path / "ca.crt", TOKEN, "dead")
    cluster = connect("dead", str(kubeconfig), timeouts=Timeouts(connect=1.0, read=1.0))
    objects = release_objects("shop", 1, Service(image("api", "1")))

    try:
        with pytest.raises(UnreachableError) as failed:
            cluster.admit(objects)
    finally:
        cluster.close()

    assert failed.value.code == "delivery"
    assert str(failed.value).startswith("Kubernetes API could not be reached to discover")
    assert "Connection refused" in str(failed.value)
    assert TOKEN not in str(failed.value)
