"""The renderer: frozen inputs in, parsed manifests out, cached by content.

One ``Renderer`` per cluster: the capabilities decide API versions (CronJob ``batch/v1`` or
``batch/v1beta1``), so they are part of every cache key. Schema validation is a separate step
(``renderers.schemas``) because it costs more than rendering and a caller may do it once per
release, not once per render.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

from reconciler.model import graph
from reconciler.model.specs import EnvironmentConfig, ManifestsSpec
from renderers import databases, objects, raw, releases
from renderers.caching import ContentCache
from renderers.capabilities import RECENT, Capabilities
from renderers.manifests import Manifests, render_all
from renderers.releases import DatabaseUnit, EnvironmentUnit, ReleaseSpec, Scope
from renderers.secrets import PasswordSource, Placeholders, SecretSource, Sensitive


class Renderer:
    def __init__(self, capabilities: Capabilities = RECENT, *, cache_size: int = 4096) -> None:
        self.capabilities = capabilities
        self.cache: ContentCache[Manifests] = ContentCache(cache_size)

    def release(self, spec: ReleaseSpec) -> Manifests:
        """Release N's own objects (ConfigMap, release Job, Deployments, Service, CronJobs, Jobs)."""
        return self._cached(
            ("release", spec, self.capabilities),
            lambda: render_all(objects.release(spec, self.capabilities)),
        )

    def service(self, spec: ReleaseSpec) -> Manifests:
        """The service's volume claims and its stable Service, selecting release ``spec``."""
        return self._cached(("service", spec), lambda: render_all(objects.service(spec)))

    def environment(self, unit: EnvironmentUnit, secrets: SecretSource) -> Manifests:
        """The Namespace and, when a service uses one, the ``nebula-secrets`` Secret."""
        return self._cached(
            ("environment", unit, secrets),
            lambda: render_all(objects.environment(unit, secrets)),
        )

    def database(self, unit: DatabaseUnit, password: PasswordSource) -> Manifests:
        return self._cached(
            ("database", unit, password),
            lambda: render_all(databases.database(unit, password)),
        )

    def _cached(self, key: Hashable, compute: Callable[[], Manifests]) -> Manifests:
        return self.cache.get(key, compute)

    def project(
        self,
        project: str,
        config: EnvironmentConfig,
        *,
        secrets: SecretSource,
        passwords: Mapping[str, Sensitive] | Placeholders,
        units: Iterable[str] | None = None,
        number: int = 1,
    ) -> Manifests:
        """Everything an environment's units would create at release ``number``, in apply order.

        With ``units``, only those units' objects (no Namespace); otherwise the environment's
        own objects first, then databases and services along the dependency order. Volume
        claims come before the release that mounts them, the stable Service after it.
        """
        out: list[Manifests] = []
        if units is None:
            out.append(self.environment(releases.environment_from_config(project, config), secrets))
        for name in graph.apply_order(config, units):
            if isinstance(config.unit(name), ManifestsSpec):
                assert config.manifests is not None
                out.append(raw.documents(config.manifests, Scope(project, config.name), number))
                continue
            if config.database(name) is not None:
                password = passwords if isinstance(passwords, Placeholders) else passwords[name]
                unit = releases.database_from_config(project, config, name)
                out.append(self.database(unit, password))
                continue
            spec = releases.release_from_config(project, config, name, number)
            per_service = self.service(spec)
            out.append(tuple(m for m in per_service if m.kind == "PersistentVolumeClaim"))
            out.append(self.release(spec))
            out.append(tuple(m for m in per_service if m.kind != "PersistentVolumeClaim"))
        return tuple(m for group in out for m in group)


_SHARED: dict[Capabilities, Renderer] = {}


def renderer(capabilities: Capabilities = RECENT) -> Renderer:
    """The process's renderer for ``capabilities``: one cache shared by every caller (the
    engine rendering what it applies, notices rendering what a request would change)."""
    if capabilities not in _SHARED:
        _SHARED[capabilities] = Renderer(capabilities)
    return _SHARED[capabilities]
