"""Whatever the file says, validation returns problems (each with a real location), never raises.

Two sources of input: documents generated from the nebula.toml schema (random subsets of
valid and invalid keys, values and types, references and depends_on), and the fixtures with
random edits (a line deleted or duplicated, a character changed, two values swapped).
"""

from __future__ import annotations

from typing import Any

import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.model import graph, validation
from reconciler.model.problems import Severity
from tests.model import samples

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- documents from the schema -------------------------------------------------------------------

RARELY = st.integers(min_value=0, max_value=9).map(lambda n: n == 0)


@st.composite
def weighted(draw: st.DrawFn, usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> Any:
    """``usual`` nine times in ten, else ``rare``."""
    return draw(rare) if draw(RARELY) else draw(usual)


NAMES = st.sampled_from(["api", "web", "db", "search", "worker", "payments", "cache"])
BAD_NAMES = st.sampled_from(["Api", "web_1", "-x", "secret", "host", "", "a" * 41, "db."])
SLUGS = weighted(NAMES, BAD_NAMES)
ENVS = st.sampled_from(["staging", "production", "prod"])
JUNK = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=2),
    st.dates(),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
UNKNOWN_KEYS = st.sampled_from(["replica", "imge", "colour", "ports", "Type"])


def sometimes(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a value of the right kind, now and then anything at all."""
    return weighted(good, JUNK)


def table(
    fields: dict[str, st.SearchStrategy[Any]], required: tuple[str, ...] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    """A random subset of ``fields`` (always ``required``), now and then an unknown key."""
    unknown = weighted(st.just(()), st.tuples(st.tuples(UNKNOWN_KEYS, JUNK)))
    return st.tuples(
        st.fixed_dictionaries(
            {k: sometimes(v) for k, v in fields.items() if k in required},
            optional={k: sometimes(v) for k, v in fields.items() if k not in required},
        ),
        unknown,
    ).map(lambda pair: {**pair[0], **dict(pair[1])})


DIGEST = "sha256:" + "0f" * 32
IMAGES = st.sampled_from(
    [
        f"registry.example.com/shop/api@{DIGEST}",
        f"api:1.2@{DIGEST}",
        "api:latest",
        "localhost:5000/api:1",
        "api",
        "API@sha256:12",
        "",
    ]
)
REFERENCE_BODIES = st.one_of(
    st.builds(lambda n, k: f"{n}.{k}", NAMES, st.sampled_from(["DATABASE_URL", "KEY", "PGHOST"])),
    st.builds(lambda n: f"host({n})", SLUGS),
    st.builds(lambda k: f"secret.{k}", st.sampled_from(["STRIPE_KEY", "bad-name"])),
    st.sampled_from(["", "api", "a.b.c", "env.HOME"]),
)
VARIABLE_VALUES = st.lists(
    st.one_of(
        st.text(max_size=6),
        REFERENCE_BODIES.map(lambda b: f"${{{{ {b} }}}}"),
        st.sampled_from(["$${{", "${{", "}}", "${{ api.KEY"]),
    ),
    max_size=3,
).map("".join)
SCHEDULES = st.one_of(
    st.sampled_from(["0 3 * * *", "*/5 * * * *", "0 3 * * 7", "L * * * *", "nightly"]),
    st.lists(st.sampled_from(["*", "0", "5-1", "*/0", "mon", "jan", "1,2", "99"]), max_size=6).map(
        " ".join
    ),
)
SIZES = st.sampled_from(["5Gi", "10Gi", "512Mi", "5GB", "0Gi", "Gi", "1.5Gi"])
INSTANCE_SIZES = st.sampled_from(["nano", "small", "medium", "large", "xlarge", "huge"])

PROCESS = table(
    {
        "type": st.sampled_from(["http", "worker", "cron", "job", "web"]),
        "command": st.lists(st.text(max_size=5), max_size=3),
        "port": st.integers(min_value=-1, max_value=70000),
        "readiness_path": st.sampled_from(["/", "/healthz", "healthz"]),
        "replicas": st.integers(min_value=-1, max_value=2000),
        "instance_size": INSTANCE_SIZES,
        "stabilization_seconds": st.integers(min_value=-1, max_value=4000),
        "primary": st.booleans(),
        "schedule": SCHEDULES,
    }
)
VOLUME = table(
    {"mount": st.sampled_from(["/data", "data"]), "size": SIZES, "accept_downtime": st.booleans()}
)
SERVICE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "image": IMAGES,
    "release_command": st.lists(st.text(max_size=5), max_size=2),
    "release_command_timeout": st.integers(min_value=-1, max_value=100000),
    "auto_deploy": st.booleans(),
    "accept_downtime": st.booleans(),
    "processes": st.dictionaries(SLUGS, PROCESS, max_size=2),
    "variables": st.dictionaries(
        st.sampled_from(["KEY", "DATABASE_URL", "1BAD", "LOG_LEVEL"]),
        sometimes(VARIABLE_VALUES),
        max_size=3,
    ),
    "volumes": st.dictionaries(SLUGS, VOLUME, max_size=1),
    "deploy": table({"depends_on": st.lists(SLUGS, max_size=3)}),
}
SERVICE = table(
    {**SERVICE_FIELDS, "environments": st.dictionaries(ENVS, table(SERVICE_FIELDS), max_size=1)},
    required=("image", "processes"),
)
DATABASE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "engine": st.sampled_from(["postgres", "mysql"]),
    "version": st.sampled_from(["16", "15.4", "latest"]),
    "instance_size": INSTANCE_SIZES,
    "volume_size": SIZES,
    "automatic_failover": st.booleans(),
}
DATABASE = table(
    {**DATABASE_FIELDS, "environments": st.dictionaries(ENVS, table(DATABASE_FIELDS), max_size=2)}
)
DOCUMENTS = table(
    {
        "project": table({"name": st.text(max_size=8)}),
        "environments": st.dictionaries(
            st.one_of(ENVS, ENVS, BAD_NAMES),
            table({"protected": st.booleans()}),
            min_size=1,
            max_size=3,
        ),
        "services": st.dictionaries(SLUGS, SERVICE, min_size=1, max_size=3),
        "databases": st.dictionaries(SLUGS, DATABASE, max_size=2),
    },
    required=("environments", "services"),
)


def assert_well_formed(text: str) -> None:
    """The validator's contract, whatever ``text`` holds."""
    project, problems = validation.check(text, "nebula.toml")
    lines = text.removesuffix("\n").split("\n")
    for problem in problems:
        where = problem.location
        assert where.path == "nebula.toml"
        assert 1 <= where.line <= len(lines), (str(problem), text)
        assert 1 <= where.col <= len(lines[where.line - 1]) + 1, (str(problem), text)
        assert problem.message and problem.hint, str(problem)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    assert (project is None) == bool(errors)
    if project is not None:
        for config in project.configs:
            order = graph.apply_order(config)
            assert sorted(order) == sorted(config.unit_names)


@FAST
@given(DOCUMENTS)
def test_generated_documents(document: dict[str, Any]) -> None:
    assert_well_formed(tomlkit.dumps(document))


@st.composite
def plausible(draw: st.DrawFn) -> dict[str, Any]:
    """A file that is valid but for its dependencies: random depends_on and references."""
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    databases = names[: draw(st.integers(min_value=0, max_value=1))]
    services = names[len(databases) :]
    targets = st.sampled_from(names)
    document: dict[str, Any] = {
        "environments": {"staging": {}, "production": {"protected": True}},
        "databases": {d: {} for d in databases},
        "services": {},
    }
    for name in services:
        variables = {"KEY": "value"}
        for index, target in enumerate(draw(st.lists(targets, max_size=2))):
            kind = draw(st.sampled_from(["var", "host", "secret"]))
            key = "DATABASE_URL" if target in databases else "KEY"
            body = {"var": f"{target}.{key}", "host": f"host({target})", "secret": "secret.S"}[kind]
            variables[f"REF_{index}"] = f"x ${{{{ {body} }}}}"
        service: dict[str, Any] = {
            "image": f"registry.example.com/{name}@{DIGEST}",
            "processes": {"web": {"type": "http", "port": 8080}},
            "variables": variables,
            "deploy": {"depends_on": draw(st.lists(targets, max_size=2, unique=True))},
        }
        if draw(st.booleans()):
            override = draw(st.lists(targets, max_size=2, unique=True))
            service["environments"] = {"production": {"deploy": {"depends_on": override}}}
        document["services"][name] = service
    return document


@FAST
@given(plausible())
def test_dependencies_are_ordered_or_reported(document: dict[str, Any]) -> None:
    text = tomlkit.dumps(document)
    assert_well_formed(text)
    project, problems = validation.check(text, "nebula.toml")
    codes = {str(p.code) for p in problems}
    assert codes <= {"dependency-cycle", "self-dependency"}, [str(p) for p in problems]
    if project is None:
        return
    for config in project.configs:
        order = graph.apply_order(config)
        for edge in graph.edges(config):
            assert order.index(edge.target) < order.index(edge.source)


# -- edited fixtures -----------------------------------------------------------------------------

FIXTURE_TEXTS = [p.read_text(encoding="utf-8") for p in samples.project_fixtures()] + [
    p.read_text(encoding="utf-8") for p in samples.invalid_fixtures()
]
CHARACTERS = st.sampled_from([*"[]{}=\"'.,#\n $\\-_:aZ09", "${{", "}}", "\t", "é"])


@st.composite
def edited(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(FIXTURE_TEXTS)).split("\n")
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        edit = draw(st.sampled_from(["delete", "duplicate", "character", "swap"]))
        at = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        if edit == "delete" and len(lines) > 1:
            del lines[at]
        elif edit == "duplicate":
            lines.insert(at, lines[at])
        elif edit == "character":
            line = lines[at]
            col = draw(st.integers(min_value=0, max_value=len(line)))
            replace = draw(st.booleans())
            lines[at] = line[:col] + draw(CHARACTERS) + line[col + int(replace) :]
        elif edit == "swap":
            assignments = [i for i, line in enumerate(lines) if " = " in line]
            if len(assignments) >= 2:
                a, b = draw(st.lists(st.sampled_from(assignments), min_size=2, max_size=2))
                key_a, value_a = lines[a].split(" = ", 1)
                key_b, value_b = lines[b].split(" = ", 1)
                lines[a], lines[b] = f"{key_a} = {value_b}", f"{key_b} = {value_a}"
    return "\n".join(lines)


@FAST
@given(edited())
def test_edited_fixtures(text: str) -> None:
    assert_well_formed(text)


@given(st.text(max_size=60))
@settings(max_examples=100, deadline=None)
def test_any_text(text: str) -> None:
    assert_well_formed(text)
