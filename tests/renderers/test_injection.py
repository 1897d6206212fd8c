"""No value from nebula.toml can change a manifest's structure.

Each corpus value goes, through a real nebula.toml, into a literal variable, a variable mixed
with a secret, a process command, the release command, a readiness path and a volume mount.
The manifests must parse to exactly the structure a benign value gives, with the value back,
exactly, where it was put.
"""

from __future__ import annotations

from typing import Any

import pytest
import tomlkit
import yaml

from reconciler.model import references, validation
from renderers import capabilities, quoting, releases, schemas
from renderers.manifests import Loader, Manifests, to_yaml
from renderers.rendering import Renderer
from tests.renderers import kube, samples
from tests.renderers.samples import container, find

BENIGN = "benign"

CORPUS = [
    "",
    "line one\nline two",
    "trailing newline\n",
    "\r\n",
    "key: value",
    ": ",
    "a: b\nc: d",
    "---",
    "---\nkind: Secret",
    "...",
    "{{ x }}",
    "{{ 7*7 }}",
    "{% if true %}x{% endif %}",
    "{# comment #}",
    "${{ api.X }}",
    "$${{",
    "$(HOME)",
    "$$",
    "$",
    "# comment",
    "a # not a comment",
    "'single'",
    '"double"',
    "\"'",
    "\\",
    "\\n",
    "\\u0041",
    "\t",
    "\x00",
    "\x1b[31mred",
    "é 日本語 עברית",
    "😀 \U0001d518",
    "\u202eright-to-left",
    "zero\u200bwidth",
    "\x85",
    "\u2028",
    "\ufeff",
    " leading and trailing ",
    "yes",
    "no",
    "on",
    "off",
    "true",
    "null",
    "~",
    "NULL",
    "0x1",
    "0o17",
    "1e3",
    ".inf",
    ".nan",
    "-1",
    "1_000",
    "2001-12-14",
    "=",
    "<<",
    "&anchor",
    "*alias",
    "!!binary",
    "!tag x",
    "%YAML 1.2",
    "@",
    "`",
    "|",
    ">",
    "? key",
    "- item",
    "[a, b]",
    "{a: b}",
    "x" * 10_000 + ": y\n- z",
]


def _toml(value: str) -> str:
    document = {
        "environments": {"staging": {}},
        "services": {
            "app": {
                "image": samples.API_IMAGE,
                "release_command": ["migrate", value],
                "processes": {
                    "web": {
                        "type": "http",
                        "port": 8080,
                        "command": ["run", value],
                        "readiness_path": "/" + value,
                    }
                },
                "variables": {
                    "PLAIN": references.escape(value),
                    "MIXED": references.escape(value) + "|${{ secret.S }}",
                },
                "volumes": {"data": {"mount": "/" + value, "size": "1Gi", "accept_downtime": True}},
            }
        },
    }
    return tomlkit.dumps(document)


def _render(value: str) -> Manifests:
    config = validation.load(_toml(value)).environment("staging")
    assert config is not None
    app = config.service("app")
    assert app is not None
    assert app.variable_map["PLAIN"] == references.escape(value)  # the TOML carried it intact
    spec = releases.release_from_config("shop", config, "app")
    renderer = Renderer()
    return renderer.release(spec) + renderer.service(spec)


def _replace_leaves(node: Any, mapping: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: _replace_leaves(v, mapping) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_leaves(v, mapping) for v in node]
    if isinstance(node, str):
        return mapping.get(node, node)
    return node


def _leaves(value: str) -> dict[str, str]:
    """Where the value lands (as Kubernetes receives it) -> what the benign value gives there."""
    mixed = "|$(NEBULA_REF_1)"
    return {
        value: BENIGN,
        "/" + value: "/" + BENIGN,
        quoting.kube_literal(value): BENIGN,
        quoting.kube_literal(value) + mixed: BENIGN + mixed,
    }


@pytest.fixture(scope="module")
def benign() -> Manifests:
    return _render(BENIGN)


@pytest.mark.parametrize("value", CORPUS, ids=[repr(v)[:40] for v in CORPUS])
def test_a_value_cannot_change_the_structure_and_reads_back_exactly(
    value: str, benign: Manifests
) -> None:
    rendered = _render(value)

    assert [m.ref for m in rendered] == [m.ref for m in benign]
    for manifest, expected in zip(rendered, benign, strict=True):
        assert _replace_leaves(manifest.body, _leaves(value)) == expected.body, manifest.ref
    documents = [d for d in yaml.load_all(to_yaml(rendered), Loader=Loader) if d is not None]
    assert [d["metadata"]["name"] for d in documents] == [m.name for m in rendered]

    deployment = find(rendered, "Deployment", "app-r1")
    assert find(rendered, "ConfigMap", "app-r1-vars").body["data"] == {"PLAIN": value}
    env = kube.container_env(samples.env_of(deployment), {("nebula-secrets", "S"): "<s>"})
    assert env["MIXED"] == value + "|<s>"
    assert [kube.expand(a, {}) for a in container(deployment)["command"]] == ["run", value]
    release_job = find(rendered, "Job", "app-r1-release")
    assert [kube.expand(a, {}) for a in container(release_job)["command"]] == ["migrate", value]
    assert container(deployment)["readinessProbe"]["httpGet"]["path"] == "/" + value
    assert container(deployment)["volumeMounts"] == [{"name": "data", "mountPath": "/" + value}]
    schemas.validate(rendered, capabilities.RECENT)
