"""Rendered objects: a template's YAML text and the parsed document it stands for.

Each object is rendered from its own template and parsed straight back (libyaml's C parser
where available, with a quicker constructor: ``loading``). The parse is the cheapest proof
that the text means what we intended: it must be one mapping of the expected kind and name,
or rendering fails naming the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from reconciler.errors import ConfigurationError, ManifestError, NebulaError
from renderers import templating
from renderers.loading import Loader


@dataclass(frozen=True)
class Draft:
    """One object before rendering: which template, with which values."""

    kind: str
    name: str
    template: str
    context: Mapping[str, Any] = field(hash=False, compare=False)


@dataclass(frozen=True)
class Manifest:
    api_version: str
    kind: str
    name: str
    namespace: str | None
    text: str = field(repr=False)  # one YAML document, without a leading ---
    body: Mapping[str, Any] = field(repr=False, hash=False, compare=False)  # do not mutate

    @property
    def ref(self) -> str:
        """``Deployment/api-r3``: how messages name an object."""
        return f"{self.kind}/{self.name}"


Manifests = tuple[Manifest, ...]


def parse(text: str) -> Any:
    return yaml.load(text, Loader=Loader)  # a safe loader (``loading``)


def render(draft: Draft) -> Manifest:
    try:
        text = templating.template(draft.template).render(draft.context)
        body = parse(text)
    except NebulaError:
        raise
    except (yaml.YAMLError, TypeError, ValueError, LookupError) as exc:
        raise ManifestError(
            f"rendering {draft.kind}/{draft.name} failed: {exc.__class__.__name__}: {exc}"
        ) from exc
    if not isinstance(body, dict):
        raise ManifestError(f"{draft.kind}/{draft.name} did not render to one YAML mapping")
    metadata = body.get("metadata")
    if (
        body.get("kind") != draft.kind
        or not isinstance(metadata, dict)
        or metadata.get("name") != draft.name
    ):
        raise ManifestError(f"{draft.kind}/{draft.name} rendered as a different object")
    return Manifest(
        body["apiVersion"], draft.kind, draft.name, metadata.get("namespace"), text, body
    )


def render_all(drafts: Iterable[Draft]) -> Manifests:
    out = tuple(render(d) for d in drafts)
    seen: set[tuple[str, str]] = set()
    for manifest in out:
        key = (manifest.kind, manifest.name)
        if key in seen:
            raise ConfigurationError(
                f"two objects would both be named {manifest.ref}",
                hint="rename the process (or volume) whose name repeats a generated one, "
                "such as a job process called 'release' next to a release_command",
            )
        seen.add(key)
    return out


def to_yaml(manifests: Iterable[Manifest]) -> str:
    """Multi-document YAML, as kubectl apply -f takes it."""
    return "".join(f"---\n{m.text}" for m in manifests)
