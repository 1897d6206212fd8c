"""Nebula: a GitOps deployment reconciler.

Layers, from the bottom up (enforced by import-linter, see pyproject.toml):

- ``reconciler.model`` and ``reconciler.core``: the pure core. Parsing and validating
  nebula.toml, the dependency graph, planning change sets, approval rules, freeze windows,
  the deployment transition table. No I/O, no clock, no session.
- ``reconciler.store``, ``reconciler.gitsource``, ``reconciler.runtimes``: effects at the edges.
- ``reconciler.services`` and ``reconciler.engine``: the application, joining core and edges.
- ``reconciler.cli``, ``reconciler.web``, ``reconciler.scheduling``: the surfaces.
"""
