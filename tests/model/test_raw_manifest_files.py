"""Raw manifest files read by validation (behaviour.md "Raw manifests (1.2)"): what a document
becomes, and the refusals that keep the poller safe (aliases that expand without bound, List
objects that would smuggle in any kind)."""

from __future__ import annotations

from reconciler.model import validation

TOML = '[kubernetes]\nmanifests = ["k8s/"]\n\n[environments.staging]\n'
POLICY = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny\n"


def _messages(files: dict[str, str]) -> list[str]:
    return [p.message for p in validation.check(TOML, files=files)[1]]


def test_documents_are_read_in_path_order_and_only_yaml_under_the_folder() -> None:
    files = {
        "k8s/b.yml": POLICY.replace("deny", "b"),
        "k8s/a.yaml": POLICY.replace("deny", "a"),
        "k8s/README.md": "not a manifest",
        "other/c.yaml": POLICY.replace("deny", "c"),
    }
    config = validation.load(TOML, files=files).environment("staging")
    assert config is not None and config.manifests is not None
    assert [(d.source, d.ref) for d in config.manifests.documents] == [
        ("k8s/a.yaml", "NetworkPolicy/a"),
        ("k8s/b.yml", "NetworkPolicy/b"),
    ]


def test_without_the_files_there_is_no_manifests_unit() -> None:
    """A caller that could not read the repository never sees every document deleted."""
    config = validation.load(TOML).environment("staging")
    assert config is not None and config.manifests is None


def test_aliases_are_refused_before_they_can_expand() -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n"
    assert _messages({"k8s/a.yaml": bomb}) == [
        "k8s/a.yaml is not valid YAML: aliases (*name) are not allowed in raw manifests"
    ]


def test_a_list_object_is_refused() -> None:
    listing = "apiVersion: v1\nkind: List\nmetadata:\n  name: all\nitems: []\n"
    assert _messages({"k8s/a.yaml": listing}) == [
        "k8s/a.yaml document 0: List/all: List holds other objects"
    ]


def test_a_path_outside_the_repository_is_refused() -> None:
    text = TOML.replace('["k8s/"]', '["../elsewhere/"]')
    assert validation.check(text, files={})[1][0].message == (
        "manifests[0] '../elsewhere/' is outside the repository"
    )


def test_a_missing_path_is_reported_once_where_it_is_written() -> None:
    text = TOML + 'manifests = ["prod/"]\n\n[environments.production]\n'
    problems = validation.check(text, files={"k8s/a.yaml": POLICY})[1]
    assert [(p.location.line, p.location.col, p.message) for p in problems] == [
        (
            5,
            14,
            "environments.staging.manifests[0] 'prod/' is missing at the commit (no file, or no "
            "*.yaml or *.yml file under that folder)",
        )
    ]
