"""The small readers an import is made of, over tables: Compose's interpolation, quantities
and durations, secret-looking names, env files, and YAML positions with merge keys."""

from __future__ import annotations

import pytest

from reconciler.importing import envfiles, interpolation, resources, values, yamltree
from reconciler.importing.yamltree import At, Mapping


@pytest.mark.parametrize(
    ("text", "expanded", "unknown"),
    [
        ("plain", "plain", ()),
        ("${TAG:-latest}", "latest", ()),
        ("${TAG-1.0}", "1.0", ()),
        ("$$HOME and $${X}", "$HOME and ${X}", ()),
        ("${SECRET}", "${SECRET}", ("SECRET",)),
        ("$TOKEN", "$TOKEN", ("TOKEN",)),
        ("${NEEDED:?set it}", "${NEEDED:?set it}", ("NEEDED",)),
        ("a-${A}-${B:-b}", "a-${A}-b", ("A",)),
    ],
)
def test_interpolation(text: str, expanded: str, unknown: tuple[str, ...]) -> None:
    result = interpolation.expand(text)
    assert (result.text, result.unknown) == (expanded, unknown)


@pytest.mark.parametrize(
    ("given", "memory"),
    [("512M", "512Mi"), ("512m", "512Mi"), ("1G", "1Gi"), ("1gb", "1Gi"), ("1.5g", "1536Mi"),
     ("536870912", "512Mi"), ("64k", "64Ki"), ("lots", None)],
)  # fmt: skip
def test_memory(given: str, memory: str | None) -> None:
    assert resources.memory(given) == memory


@pytest.mark.parametrize(
    ("given", "cpu"), [("0.5", "500m"), ("1", "1"), ("1.5", "1500m"), ("0", None), ("x", None)]
)
def test_cpu(given: str, cpu: str | None) -> None:
    assert resources.cpu(given) == cpu


@pytest.mark.parametrize(
    ("given", "seconds"), [("10s", 10), ("1m30s", 90), ("1.5s", 2), ("2h", 7200), ("300ms", 1),
                           ("soon", None), ("10", None)]
)  # fmt: skip
def test_durations(given: str, seconds: int | None) -> None:
    assert resources.seconds(given) == seconds


@pytest.mark.parametrize(
    ("key", "secret"),
    [("POSTGRES_PASSWORD", True), ("DJANGO_SECRET_KEY", True), ("GITHUB_TOKEN", True),
     ("STRIPE_API_KEY", True), ("SECRET_KEY_BASE", True), ("SENTRY_DSN", True),
     ("MYSQL_ROOT_PASSWORD", True), ("dbpassword", True), ("SECRET_KEY_FILE", False),
     ("LOG_LEVEL", False), ("KEYBOARD_LAYOUT", False), ("DJANGO_SETTINGS_MODULE", False)],
)  # fmt: skip
def test_secret_looking_names(key: str, secret: bool) -> None:
    assert values.looks_secret(key) is secret


def test_env_file_lines() -> None:
    lines, bad = envfiles.parse(
        "# comment\n\nA=1\nexport B='two words'\n  C=\"x\\ny\" # note\nD\nE=value # comment\n= nothing\n"
    )
    assert [(line.key, line.value, line.at) for line in lines] == [
        ("A", "1", At(3, 1)),
        ("B", "two words", At(4, 1)),
        ("C", "x\ny", At(5, 3)),
        ("D", None, At(6, 1)),
        ("E", "value", At(7, 1)),
    ]
    assert bad == [At(8, 1)]


def test_positions_and_merge_keys() -> None:
    root = yamltree.parse(
        "x-base: &base\n  restart: always\n  image: a:1\nservices:\n  web:\n    <<: *base\n    image: b:2\n"
    )
    assert isinstance(root, Mapping)
    services = root.value("services")
    assert isinstance(services, Mapping)
    web = services.value("web")
    assert isinstance(web, Mapping)
    assert [(e.key, yamltree.text_of(e.value), e.key_at) for e in web] == [
        ("image", "b:2", At(7, 5)),  # written here: wins over the merged one
        ("restart", "always", At(2, 3)),  # merged: where the anchor wrote it
    ]


def test_aliases_cannot_blow_up() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
        for i in range(8)
    ]
    with pytest.raises(yamltree.YamlError, match="too many nodes"):
        yamltree.parse("\n".join(lines) + "\n")
