"""A small project used across the git-to-change-set tests."""

from __future__ import annotations

from tests.plugins.nebula import image

BASE = f'''
[project]
name = "Shop"

[environments.staging]
[environments.production]
protected = true

[databases.db]

[services.api]
image = "{image("api")}"
[services.api.processes.web]
type = "http"
port = 8080
[services.api.variables]
LOG_LEVEL = "info"
DATABASE_URL = "${{{{ db.DATABASE_URL }}}}"

[services.worker]
image = "{image("worker")}"
[services.worker.processes.main]
type = "worker"
[services.worker.variables]
API_URL = "http://${{{{ host(api) }}}}"
'''


def shop(**replacements: str) -> str:
    text = BASE
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def with_log_level(level: str) -> str:
    return BASE.replace('LOG_LEVEL = "info"', f'LOG_LEVEL = "{level}"')
