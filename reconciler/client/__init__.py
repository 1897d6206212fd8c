"""The command line's client: saved contexts and the one module that speaks HTTP to Nebula.

Light by design: a remote command imports this and nothing of the server (no store, ORM,
Kubernetes client or web framework), which ``tests/cli/test_startup.py`` checks.
"""
