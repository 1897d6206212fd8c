"""The canary flow runs once per session of this directory; its tests read what it recorded."""

from __future__ import annotations

import pytest

from tests.security import flow
from tests.security.installation import Recorded


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return flow.run(tmp_path_factory.mktemp("canaries"))
