"""Variables as container environment: ConfigMap literals, secretKeyRef, composition."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.errors import ConfigurationError
from renderers import quoting, releases
from renderers.manifests import to_yaml
from renderers.rendering import Renderer
from renderers.secrets import SecretValues, Sensitive
from tests.renderers import kube, samples
from tests.renderers.samples import env_of, find

SECRET_VALUE = "sk_live_T0pS3cret$(HOME)"
PASSWORD = "p@ss/word:with?chars&$"


def _project(variables: str) -> str:
    return f"""
[environments.staging]
[databases.db]
[services.web]
image = "{samples.API_IMAGE}"
[services.web.processes.web]
type = "http"
port = 8000
[services.plain]
image = "{samples.API_IMAGE}"
[services.plain.processes.run]
type = "worker"
[services.app]
image = "{samples.API_IMAGE}"
[services.app.processes.run]
type = "worker"
[services.app.variables]
{variables}
"""


def _render(variables: str) -> tuple[dict[str, str], list[dict[str, object]]]:
    """The app's ConfigMap data and env entries."""
    rendered = Renderer().release(
        releases.release_from_config("shop", samples.config(_project(variables)), "app")
    )
    data: dict[str, str] = next((m.body["data"] for m in rendered if m.kind == "ConfigMap"), {})
    return data, env_of(find(rendered, "Deployment", "app-r1"))


def test_a_secret_is_a_secret_key_ref_to_the_environment_secret() -> None:
    data, env = _render('STRIPE = "${{ secret.STRIPE_KEY }}"')

    assert data == {}
    assert env == [
        {
            "name": "STRIPE",
            "valueFrom": {"secretKeyRef": {"name": "nebula-secrets", "key": "STRIPE_KEY"}},
        }
    ]


@pytest.mark.parametrize("key", ["DATABASE_URL", "PGUSER", "PGPASSWORD"])
def test_database_credentials_are_secret_key_refs(key: str) -> None:
    data, env = _render(f'V = "${{{{ db.{key} }}}}"')

    assert data == {}
    assert env == [
        {"name": "V", "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": key}}}
    ]


def test_non_credential_database_keys_and_hosts_are_literals() -> None:
    data, env = _render(
        "\n".join(
            [
                'HOST = "${{ db.PGHOST }}"',
                'PORT = "${{ db.PGPORT }}"',
                'NAME = "${{ db.PGDATABASE }}"',
                'WEB = "http://${{ host(web) }}/api"',
                'PLAIN = "${{ host(plain) }}"',
                'DB = "${{ host(db) }}"',
                'TEXT = "a $$${{ literal }} and $(HOME)"',
            ]
        )
    )

    assert env == []
    assert data == {
        "HOST": "db.shop-staging.svc.cluster.local",
        "PORT": "5432",
        "NAME": "db",
        "WEB": "http://web.shop-staging.svc.cluster.local:8000/api",
        "PLAIN": "plain.shop-staging.svc.cluster.local",
        "DB": "db.shop-staging.svc.cluster.local:5432",
        "TEXT": "a $${{ literal }} and $(HOME)",  # envFrom values are not expanded
    }


def test_mixed_values_compose_hidden_references_that_come_first() -> None:
    data, env = _render(
        "\n".join(
            [
                'A_PLAIN = "x"',
                'B_MIXED = "postgres://u:${{ db.PGPASSWORD }}@h/$(NOT_A_VAR) $$ ${{ secret.TOKEN }}"',
                'C_AGAIN = "Bearer ${{ secret.TOKEN }}"',
            ]
        )
    )

    assert data == {"A_PLAIN": "x"}
    assert env == [
        {
            "name": "NEBULA_REF_1",
            "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": "PGPASSWORD"}},
        },
        {
            "name": "NEBULA_REF_2",
            "valueFrom": {"secretKeyRef": {"name": "nebula-secrets", "key": "TOKEN"}},
        },
        {
            "name": "B_MIXED",
            "value": "postgres://u:$(NEBULA_REF_1)@h/$$(NOT_A_VAR) $$$$ $(NEBULA_REF_2)",
        },
        {"name": "C_AGAIN", "value": "Bearer $(NEBULA_REF_2)"},
    ]
    seen = kube.container_env(
        env, {("db-credentials", "PGPASSWORD"): "pw", ("nebula-secrets", "TOKEN"): "tok"}
    )
    assert seen["B_MIXED"] == "postgres://u:pw@h/$(NOT_A_VAR) $$ tok"
    assert seen["C_AGAIN"] == "Bearer tok"


def test_hidden_names_skip_the_names_of_real_variables() -> None:
    _, env = _render('NEBULA_REF_1 = "${{ secret.A }}"\nMIX = "x${{ secret.B }}"')

    assert [e["name"] for e in env] == ["NEBULA_REF_2", "NEBULA_REF_1", "MIX"]
    assert env[2]["value"] == "x$(NEBULA_REF_2)"


def test_resolved_service_references_carry_their_secret_references() -> None:
    rendered = Renderer().release(samples.release())
    env = {e["name"]: e for e in env_of(find(rendered, "Deployment", "api-r1"))}

    assert env["SEARCH_KEY"] == {
        "name": "SEARCH_KEY",
        "valueFrom": {"secretKeyRef": {"name": "nebula-secrets", "key": "SEARCH_KEY"}},
    }
    assert find(rendered, "ConfigMap", "api-r1-vars").body["data"] == {
        "LOG_LEVEL": "info",
        "SEARCH_URL": "http://search.shop-staging.svc.cluster.local:9200/v1",
        "DB_HOST": "db.shop-staging.svc.cluster.local:5432/db",
    }


@pytest.mark.parametrize(
    "text", ["", "$", "$$", "$(", "$$(", "$(HOME)", "$$(HOME)", "a$", "$)", "$(a$(b))", "$$$(x"]
)
def test_kube_literal_survives_kubernetes_expansion(text: str) -> None:
    assert kube.expand(quoting.kube_literal(text), {"HOME": "/root", "a": "A", "x": "X"}) == text


@given(st.text(alphabet="$()ab_HOME", max_size=30))
def test_kube_literal_survives_expansion_of_any_text(text: str) -> None:
    assert kube.expand(quoting.kube_literal(text), {"HOME": "/root", "a": "A", "b": "B"}) == text


def test_commands_run_exactly_as_written() -> None:
    text = samples.WORKER_ONLY.replace('["bin/run"]', '["sh", "-c", "kill -0 $$ && echo $(date)"]')
    deployment = find(samples.render_project(text), "Deployment", "jobs-r1")

    command = samples.container(deployment)["command"]
    assert command == ["sh", "-c", "kill -0 $$$$ && echo $$(date)"]
    assert [kube.expand(arg, {"date": "NO"}) for arg in command] == [
        "sh",
        "-c",
        "kill -0 $$ && echo $(date)",
    ]


def _real_secrets() -> SecretValues:
    return SecretValues.of(
        {"SEARCH_KEY": SECRET_VALUE, "STRIPE_KEY": "unused-but-set"}, "shop/staging"
    )


def test_real_secret_values_appear_only_in_the_secret_objects_and_never_in_clear() -> None:
    config = samples.config()
    renderer = Renderer()
    rendered = renderer.project(
        "shop", config, secrets=_real_secrets(), passwords={"db": Sensitive(PASSWORD)}
    )
    text = to_yaml(rendered)

    assert SECRET_VALUE not in text
    assert PASSWORD not in text
    secret = find(rendered, "Secret", "nebula-secrets")
    assert set(secret.body) >= {"data"} and "stringData" not in secret.body
    assert base64.b64decode(secret.body["data"]["SEARCH_KEY"]).decode() == SECRET_VALUE
    credentials = find(rendered, "Secret", "db-credentials")
    assert base64.b64decode(credentials.body["data"]["PGPASSWORD"]).decode() == PASSWORD
    url = base64.b64decode(credentials.body["data"]["DATABASE_URL"]).decode()
    assert (
        url
        == "postgresql://db:p%40ss%2Fword%3Awith%3Fchars%26%24@db.shop-staging.svc.cluster.local:5432/db"
    )
    encoded = [base64.b64encode(v.encode()).decode() for v in (SECRET_VALUE, PASSWORD)]
    holders = {m.ref for m in rendered if any(e in m.text for e in encoded)}
    assert holders == {"Secret/nebula-secrets", "Secret/db-credentials"}


def test_a_missing_secret_is_a_configuration_error_that_says_how_to_set_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Renderer().environment(
            releases.environment_from_config("shop", samples.config()),
            SecretValues.of({"STRIPE_KEY": "x"}, "shop/staging"),
        )

    assert caught.value.code == "configuration"
    assert caught.value.message == "Secret SEARCH_KEY is not set for shop/staging"
    assert caught.value.hint == "set it with: nebula secret set shop staging SEARCH_KEY"


def test_secret_values_never_show_in_a_repr() -> None:
    values = _real_secrets()

    assert SECRET_VALUE not in repr(values)
    assert SECRET_VALUE not in repr(values.values)
    assert repr(Sensitive(PASSWORD)) == "Sensitive(<hidden>)"
    assert str(Sensitive(PASSWORD)) == "<hidden>"


def test_placeholders_are_clearly_marked() -> None:
    rendered = samples.render_project()

    assert find(rendered, "Secret", "nebula-secrets").body["stringData"] == {
        "SEARCH_KEY": "<secret SEARCH_KEY: set on the server with nebula secret set>",
    }
    assert find(rendered, "Secret", "db-credentials").body["stringData"]["PGPASSWORD"] == (
        "<generated on the server>"
    )
