"""Parts loaded by name, late: the one way Nebula defers a heavy import.

Start-up time is a feature: ``nebula --version`` should cost what ``kubectl version`` costs,
a remote command should load an HTTP client and nothing of the server, and a local one the
store but not the Kubernetes client unless ``NEBULA_CLUSTER=kubernetes``. So the heavy parts
(the command line's backends, the Kubernetes runtime, the store's migrations, the API's
acts) are named here, as ``module:attribute``, and imported the first time they are used;
nowhere else imports inside a function. The names are checked by ``tests/test_house.py``
(each one loads), since a static import graph cannot see them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Part:
    """A module's attribute, imported on first use (Python caches the module)."""

    module: str
    attribute: str

    @classmethod
    def named(cls, reference: str) -> Part:
        module, _, attribute = reference.partition(":")
        return cls(module, attribute)

    def get(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attribute)

    def calling(self) -> Callable[..., Any]:
        """A function that imports this part when first called, then calls it: a command's
        handler registered without loading the module it lives in."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.get()(*args, **kwargs)

        return call

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}"


# The TOML parser, for the settings file (--config) and the command line's contexts: a command
# with neither does not load it. Its errors (tomllib.TOMLDecodeError) are ValueErrors.
TOML = Part("tomllib", "loads")
