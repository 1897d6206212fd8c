"""``nebula diff``: the live objects against the active release's manifests, read from the
cluster now (on Kubernetes, from the watch cache); records nothing. As public as the page.
A module of its own: reading the cluster brings the renderer and the engine's drift checks,
which a status does not need."""

from __future__ import annotations

from reconciler import liveviews
from reconciler.acts.calls import Call, Document
from reconciler.engine import drifting


def diff(call: Call) -> Document:
    slug = call.param("slug")
    inspected = drifting.inspect(call.ctx, slug, call.option("env"), call.option("service"))
    return liveviews.diff(slug, inspected)
