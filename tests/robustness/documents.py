"""Generated nebula.toml documents: a small model of a project (services with images, replicas,
variables, dependencies, a database) that renders to a valid file, and strategies over it.

The model stays valid by construction (dependencies only point at services earlier in
``SERVICES``, so there is never a cycle); invalid files are made on purpose by ``broken``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from reconciler.core.states import Blocker

SERVICES = ("api", "web", "worker", "search")
HTTP = {"api", "web"}
LEVELS = ("debug", "info", "warn")


def image(service: str, tag: str) -> str:
    digest = hashlib.sha256(f"{service}:{tag}".encode()).hexdigest()
    return f"registry.example.com/shop/{service}@sha256:{digest}"


GOOD_TAGS = ("v1", "v2", "v3")
# Tags whose images the simulated cluster fails, by the blocker it fails with.
FAULTY_TAGS = {
    "pull": Blocker.IMAGE_PULL,
    "capacity": Blocker.CAPACITY,
    "ready": Blocker.READINESS,
    "route": Blocker.ROUTE_ACTIVATION,
    "migrate": Blocker.RELEASE_COMMAND,
}
BROKEN_DB_VERSION = "17"  # postgres:17 cannot be pulled


def faults_toml() -> str:
    lines = []
    for service in SERVICES:
        for tag, blocker in FAULTY_TAGS.items():
            lines.append(f'[images."{image(service, tag)}"]\nfail = "{blocker.value}"\n')
    lines.append(f'[images."postgres:{BROKEN_DB_VERSION}"]\nfail = "image-pull"\n')
    return "\n".join(lines)


@dataclass(frozen=True)
class Service:
    name: str
    tag: str = "v1"
    replicas: int = 1
    production_replicas: int | None = None  # an override in production
    level: str = "info"
    feature: str | None = None  # an optional FEATURE variable
    depends_on: tuple[str, ...] = ()
    uses_db: bool = False
    reads_peer: str | None = None  # ${{ peer.LOG_LEVEL }}: a dependency by reference
    auto_deploy: bool = True
    release_command: bool = False

    @property
    def image(self) -> str:
        return image(self.name, self.tag)


@dataclass(frozen=True)
class Document:
    services: tuple[Service, ...]
    database: bool = False
    database_version: str = "16"

    def service(self, name: str) -> Service | None:
        return next((s for s in self.services if s.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.services)

    def render(self) -> str:
        out = [
            '[project]\nname = "Shop"\n',
            "[environments.staging]\n",
            "[environments.production]\nprotected = true\n",
        ]
        if self.database:
            out.append(f'[databases.db]\nversion = "{self.database_version}"\n')
        for s in self.services:
            out.append(_service(s))
        return "\n".join(out)


def _service(s: Service) -> str:
    text = f'[services.{s.name}]\nimage = "{s.image}"\n'
    if not s.auto_deploy:
        text += "auto_deploy = false\n"
    if s.release_command:
        text += 'release_command = ["bin/migrate"]\nrelease_command_timeout = 60\n'
    process = "web" if s.name in HTTP else "main"
    text += f"\n[services.{s.name}.processes.{process}]\n"
    if s.name in HTTP:
        text += 'type = "http"\nport = 8080\nstabilization_seconds = 0\n'
    else:
        text += 'type = "worker"\nstabilization_seconds = 0\n'
    text += f"replicas = {s.replicas}\n"
    text += f'\n[services.{s.name}.variables]\nLOG_LEVEL = "{s.level}"\n'
    if s.feature is not None:
        text += f'FEATURE = "{s.feature}"\n'
    if s.uses_db:
        text += 'DATABASE_URL = "${{ db.DATABASE_URL }}"\n'
    if s.reads_peer is not None:
        text += f'PEER_LEVEL = "${{{{ {s.reads_peer}.LOG_LEVEL }}}}"\n'
    if s.depends_on:
        listed = ", ".join(f'"{d}"' for d in s.depends_on)
        text += f"\n[services.{s.name}.deploy]\ndepends_on = [{listed}]\n"
    if s.production_replicas is not None:
        text += (
            f"\n[services.{s.name}.environments.production]\n"
            f"processes.{process}.replicas = {s.production_replicas}\n"
        )
    return text


TAGS = st.sampled_from(GOOD_TAGS * 3 + tuple(FAULTY_TAGS))


@st.composite
def documents(draw: st.DrawFn) -> Document:
    present = draw(
        st.lists(st.sampled_from(SERVICES), min_size=1, max_size=len(SERVICES), unique=True)
    )
    ordered = [n for n in SERVICES if n in present]
    database = draw(st.booleans())
    services = []
    for index, name in enumerate(ordered):
        earlier = ordered[:index]
        services.append(
            Service(
                name=name,
                tag=draw(TAGS),
                replicas=draw(st.integers(1, 3)),
                production_replicas=draw(st.none() | st.integers(1, 4)),
                level=draw(st.sampled_from(LEVELS)),
                feature=draw(st.none() | st.sampled_from(["on", "off"])),
                depends_on=tuple(draw(st.lists(st.sampled_from(earlier), unique=True)))
                if earlier
                else (),
                uses_db=database and draw(st.booleans()),
                reads_peer=draw(st.none() | st.sampled_from(earlier)) if earlier else None,
                auto_deploy=draw(st.integers(0, 5)) > 0,
                release_command=draw(st.integers(0, 3)) == 0,
            )
        )
    version = draw(st.sampled_from(["16", "16", "16", BROKEN_DB_VERSION]))
    return Document(tuple(services), database, version)


@st.composite
def edits(draw: st.DrawFn, base: Document) -> Document:
    """A small change of ``base``: what a team pushes from one commit to the next."""
    kind = draw(
        st.sampled_from(["image", "variable", "replicas", "add", "remove", "depend", "new"])
    )
    if kind == "new" or not base.services:
        return draw(documents())
    target = draw(st.sampled_from(base.services))
    others = [s for s in base.services if s.name != target.name]
    if kind == "image":
        changed = replace(target, tag=draw(TAGS))
    elif kind == "variable":
        changed = replace(
            target,
            level=draw(st.sampled_from(LEVELS)),
            feature=draw(st.none() | st.sampled_from(["on", "off"])),
        )
    elif kind == "replicas":
        changed = replace(
            target,
            replicas=draw(st.integers(1, 3)),
            production_replicas=draw(st.none() | st.integers(1, 4)),
        )
    elif kind == "remove" and others:
        kept = [
            replace(
                s,
                depends_on=tuple(d for d in s.depends_on if d != target.name),
                reads_peer=None if s.reads_peer == target.name else s.reads_peer,
            )
            for s in others
        ]
        return replace(base, services=tuple(kept))
    elif kind == "add":
        missing = [n for n in SERVICES if base.service(n) is None]
        if not missing:
            return base
        name = draw(st.sampled_from(missing))
        earlier = [s.name for s in base.services if SERVICES.index(s.name) < SERVICES.index(name)]
        added = Service(
            name,
            tag=draw(TAGS),
            depends_on=tuple(draw(st.lists(st.sampled_from(earlier), unique=True)))
            if earlier
            else (),
            uses_db=base.database and draw(st.booleans()),
        )
        merged = sorted([*base.services, added], key=lambda s: SERVICES.index(s.name))
        return replace(base, services=tuple(merged))
    else:  # depend
        earlier = [s.name for s in others if SERVICES.index(s.name) < SERVICES.index(target.name)]
        if not earlier:
            return base
        changed = replace(
            target, depends_on=tuple(draw(st.lists(st.sampled_from(earlier), unique=True)))
        )
    services = tuple(changed if s.name == target.name else s for s in base.services)
    return replace(base, services=services)


_HEAD = (
    "[environments.staging]\n[environments.production]\nprotected = true\n\n"
    f'[services.api]\nimage = "{image("api", "v1")}"\n'
)
_WEB = '[services.api.processes.web]\ntype = "http"\nport = 8080\n'

# kind -> (an invalid file, a part of the validation message it must give)
BROKEN = {
    "self-dependency": (
        _HEAD + _WEB + '[services.api.deploy]\ndepends_on = ["api"]\n',
        "depends on itself",
    ),
    "unknown-reference": (
        _HEAD + _WEB + '[services.api.variables]\nX = "${{ ghost.KEY }}"\n',
        "names unknown service or database 'ghost'",
    ),
    "wrong-type": (_HEAD + _WEB.replace("8080", '"eighty"'), "port"),
    "unknown-key": (_HEAD + 'imge = "x"\n' + _WEB, "imge"),
    "not-toml": (_HEAD + "[services.api\n", "nebula.toml:"),
}
