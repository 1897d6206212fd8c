"""The HTTP surface of ``nebula serve``: the status page, the JSON API, webhooks, health and
metrics. ``create_app`` (in ``reconciler.web.app``) builds it around a ``Context``."""
