"""Shared fixtures live in tests/plugins/, one module per concern."""

pytest_plugins = [
    "tests.plugins.infra",
    "tests.plugins.git",
    "tests.plugins.nebula",
    "tests.plugins.doors",
    "tests.plugins.slack",
    "tests.plugins.receivers",
    "tests.plugins.mailserver",
]
