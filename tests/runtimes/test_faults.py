"""``NEBULA_SIMULATED_FAULTS``: faults by image, and environments whose simulated cluster has no
CloudNativePG operator; a file it cannot use is refused naming the entry and what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.core.states import Blocker
from reconciler.errors import ConfigurationError
from reconciler.runtimes import faults


def _load(tmp_path: Path, text: str) -> faults.Faults:
    path = tmp_path / "faults.toml"
    path.write_text(text)
    return faults.load(str(path))


def test_images_and_environments_without_the_operator(tmp_path: Path) -> None:
    found = _load(
        tmp_path,
        '[images."reg/api@sha256:1"]\nfail = "image-pull"\n'
        '[environments."shop/production"]\ncloudnative_pg = false\n'
        '[environments."shop/staging"]\ncloudnative_pg = true\n',
    )
    assert found.images == {"reg/api@sha256:1": Blocker.IMAGE_PULL}
    assert found.without_cloudnative_pg == frozenset({"shop/production"})


def test_no_file_injects_nothing() -> None:
    assert faults.load("") == faults.Faults()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[environments.production]\ncloudnative_pg = false\n",
            'environments."production" is not written project/environment',
        ),
        (
            '[environments."shop/production"]\nredis = false\n',
            'environments."shop/production" may only say cloudnative_pg = true or false',
        ),
        (
            '[environments."shop/production"]\ncloudnative_pg = "no"\n',
            "environments.\"shop/production\".cloudnative_pg is 'no', not true or false",
        ),
        ("[clusters]\n", 'expected only [images."<image>"] and'),
    ],
)
def test_a_file_it_cannot_use_is_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match="NEBULA_SIMULATED_FAULTS") as refused:
        _load(tmp_path, text)
    assert message in refused.value.message
