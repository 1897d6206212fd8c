"""Nebula: a GitOps deployment reconciler.

The house, top to bottom; every import points down, and rooms of one floor (``|``) do not
know each other (enforced by import-linter, see ``[tool.importlinter]`` in pyproject.toml)::

    surfaces   cli  >  demo | serving  >  bootstrap  >  web  >  scheduling | views  >  liveviews
    flows      reconciling  >  gitops  >  requests
    engine     engine
    records    admin | context
    edges      notifiers | runtimes | gitsource  >  store
    pure       renderers | core  >  model
    base       settings | logs  >  clock | durations | numbers  >  errors

- ``gitops``: polling the tracked branch and staging what changed into change sets.
- ``requests``: change sets and applying them, approvals and decisions, the actions people
  request (rollback, promote, redeploy, cancel), freezes and the concurrency cap.
- ``engine``: releases, queueing and supersession, the stages, the reconcile tick (batches
  of due deployments, their cluster calls on a pool of workers).
- ``admin``: members and tokens, policies and freezes, projects and secrets;
  ``context``: the edges a flow is handed (database, clock, settings, vault, clusters, git).
- ``model``, ``core``, ``renderers``: parsing and validating nebula.toml, planning, the
  transition tables and decisions, manifests. No I/O, no clock, no session.
"""

# The one place the version is written: pyproject.toml reads it from here (``dynamic``), so
# ``nebula --version`` needs no package metadata (importlib.metadata costs a fifth of a start).
__version__ = "0.1.0"
