"""``nebula clusters``: each cluster Nebula deploys to, asked now whether it answers, with the
environments on it. A member read: it names servers, which the public status page does not.

The clusters are the kubeconfig contexts the projects' environments name (``nebula project set
SLUG cluster.ENV CONTEXT``) and the default one (the kubeconfig's current context, or the pod's
service account), which is listed even with no environment on it (it is where a new project
deploys) unless there is none. Contexts that are
one context by name (the default and an environment naming the current context) are one row.
Each is asked its version once, in turn (a cluster that does not answer costs its connect
timeout); a context the kubeconfig lacks is a row with the error and no server.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from reconciler.acts.calls import Call, Document
from reconciler.errors import ConfigurationError
from reconciler.runtimes.cluster import About
from reconciler.store import schema


def list_clusters(call: Call) -> Document:
    placed: dict[str | None, list[str]] = {None: []}
    with call.ctx.db.reading() as session:
        for project in session.scalars(select(schema.Project).order_by(schema.Project.slug)):
            for env in project.environments:
                context = (project.clusters or {}).get(env.name)
                placed.setdefault(context, []).append(f"{project.slug}/{env.name}")
    rows: dict[str | None, tuple[About, list[str]]] = {}
    for context, environments in placed.items():
        try:
            about = call.ctx.clusters.for_context(context).describe()
        except ConfigurationError as exc:
            if context is None and not environments:
                continue  # no default context, and nothing needs one
            about = About(context, None, None, exc.message, None)
        if about.context in rows:
            rows[about.context][1].extend(environments)
        else:
            rows[about.context] = (about, list(environments))
    return {"clusters": [_cluster(about, sorted(envs)) for about, envs in rows.values()]}


def _cluster(about: About, environments: list[str]) -> dict[str, Any]:
    return {
        "context": about.context,
        "server": about.server,
        "version": about.version,
        "reachable": about.reachable,
        "error": about.error,
        "credentials": about.credentials.value if about.credentials else None,
        "environments": environments,
    }
