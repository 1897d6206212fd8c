"""The project the git-to-change-set tests push: fixtures/projects/storefront."""

from __future__ import annotations

from fixtures import loading

BASE = loading.project("storefront")


def shop(**replacements: str) -> str:
    return loading.project("storefront", replacements)


def with_log_level(level: str) -> str:
    return shop(**{'LOG_LEVEL = "info"': f'LOG_LEVEL = "{level}"'})
