"""Shared fixtures live in tests/plugins/, one module per concern."""

import os

# pytest-xdist gives its workers COLUMNS=80 and LINES=24: the command line would then wrap its
# tables as on an 80-column terminal, where a single-process run (and a pipe) does not.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

pytest_plugins = [
    "tests.plugins.infra",
    "tests.plugins.git",
    "tests.plugins.nebula",
    "tests.plugins.doors",
    "tests.plugins.slack",
    "tests.plugins.receivers",
    "tests.plugins.mailserver",
    "tests.plugins.ordering",
]
