"""The planner over generated files and sequences of pushes (``reconciler.core.planning``).

Documents are generated from most of the format (processes of every type, volumes, release
commands, databases, per-environment overrides, variables added and removed, dependencies),
rendered with tomlkit and validated by the real parser. Properties:

- applying a plan's ``after`` values to the recorded file's fields gives the new file's fields,
  unit by unit (and over a whole sequence of pushes, the last file from the first);
- a line exists only for a field that changed, once, in a stable order, with the right kind;
- ``before`` is the live value (whatever is live, drifted or not), never the recorded one;
- planning a file against itself stages nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reconciler.core import planning
from reconciler.core.planning import FIRST_DEPLOY_FIELD, REMOVAL_FIELD, PlannedLine, Value
from reconciler.core.states import LineKind
from reconciler.model import resolved, validation
from reconciler.model.specs import EnvironmentConfig

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SERVICE_NAMES = ["api", "web", "worker", "search", "mailer"]
DATABASE_NAMES = ["db", "cache-db"]
ENVIRONMENTS = ("staging", "production")
DIGESTS = ["sha256:" + c * 64 for c in "abcdef"]
SIZES = ["nano", "small", "medium", "large", "xlarge"]
SCHEDULES = ["0 3 * * *", "*/5 * * * *", "15 2 * * 1-5"]
KEYS = ["LOG_LEVEL", "FEATURE_X", "TIMEOUT", "REGION"]
VALUES = st.sampled_from(["info", "debug", "on", "off", "30", "eu", "", "a b", "$${{ x }}"])


@st.composite
def processes(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = draw(
        st.lists(
            st.sampled_from(["web", "worker", "nightly", "once"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    for name in names:
        kind = {"web": "http", "worker": "worker", "nightly": "cron", "once": "job"}[name]
        p: dict[str, Any] = {"type": kind}
        if kind == "http":
            p["port"] = draw(st.sampled_from([8080, 8000]))
            if draw(st.booleans()):
                p["readiness_path"] = draw(st.sampled_from(["/", "/healthz"]))
        if kind == "worker" and draw(st.booleans()):
            p["port"] = 9000
        if kind == "cron":
            p["schedule"] = draw(st.sampled_from(SCHEDULES))
        if kind in ("http", "worker"):
            if draw(st.booleans()):
                p["replicas"] = draw(st.integers(1, 4))
            if draw(st.booleans()):
                p["stabilization_seconds"] = draw(st.integers(0, 30))
        if draw(st.booleans()):
            p["instance_size"] = draw(st.sampled_from(SIZES))
        if draw(st.booleans()):
            p["command"] = draw(
                st.sampled_from([["run"], ["gunicorn", "app:app"], ["bin/x", "-v"]])
            )
        out[name] = p
    return out


@st.composite
def services(
    draw: st.DrawFn, name: str, earlier: list[str], databases: list[str]
) -> dict[str, Any]:
    s: dict[str, Any] = {"image": f"registry.example.com/{name}@{draw(st.sampled_from(DIGESTS))}"}
    if draw(st.booleans()):
        s["auto_deploy"] = draw(st.booleans())
    if draw(st.booleans()):
        s["release_command"] = draw(st.sampled_from([["bin/migrate"], ["rake", "db:migrate"]]))
        if draw(st.booleans()):
            s["release_command_timeout"] = draw(st.integers(60, 900))
    s["processes"] = draw(processes())
    variables = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3))
    if draw(st.booleans()) and databases:
        variables["DATABASE_URL"] = f"${{{{ {draw(st.sampled_from(databases))}.DATABASE_URL }}}}"
    if draw(st.booleans()) and earlier:
        variables["PEER"] = f"http://${{{{ host({draw(st.sampled_from(earlier))}) }}}}"
    if variables:
        s["variables"] = variables
    if draw(st.booleans()):
        s["accept_downtime"] = True
        if draw(st.booleans()):
            s["volumes"] = {
                "data": {"mount": "/data", "size": draw(st.sampled_from(["1Gi", "5Gi"]))}
            }
    if draw(st.booleans()) and earlier:
        s["deploy"] = {
            "depends_on": draw(st.lists(st.sampled_from(earlier), min_size=1, unique=True))
        }
    overrides: dict[str, Any] = {}
    if draw(st.booleans()):
        overrides["variables"] = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2))
    long_running = [n for n, p in s["processes"].items() if p["type"] in ("http", "worker")]
    if draw(st.booleans()) and long_running:
        overrides["processes"] = {long_running[0]: {"replicas": draw(st.integers(1, 6))}}
    if draw(st.booleans()):
        overrides["image"] = f"registry.example.com/{name}@{draw(st.sampled_from(DIGESTS))}"
    if overrides:
        s["environments"] = {"production": overrides}
    return s


@st.composite
def files(draw: st.DrawFn) -> str:
    doc: dict[str, Any] = {"environments": {"staging": {}, "production": {"protected": True}}}
    dbs = draw(st.lists(st.sampled_from(DATABASE_NAMES), max_size=2, unique=True))
    if dbs:
        doc["databases"] = {
            n: {
                "version": draw(st.sampled_from(["15", "16"])),
                "instance_size": draw(st.sampled_from(SIZES)),
                "volume_size": draw(st.sampled_from(["10Gi", "20Gi"])),
                "automatic_failover": draw(st.booleans()),
            }
            for n in dbs
        }
    names = draw(st.lists(st.sampled_from(SERVICE_NAMES), min_size=1, max_size=4, unique=True))
    ordered = [n for n in SERVICE_NAMES if n in names]
    doc["services"] = {n: draw(services(n, ordered[:i], dbs)) for i, n in enumerate(ordered)}
    return tomlkit.dumps(doc)


def config(text: str, env: str) -> EnvironmentConfig:
    file, _problems = validation.check(text, "nebula.toml")
    assume(file is not None)
    assert file is not None
    found = file.environment(env)
    assert found is not None
    return found


def fields(cfg: EnvironmentConfig) -> dict[str, dict[str, Value]]:
    """Each unit's fields, without the ones that are unset."""
    return {
        u.name: {k: v for k, v in planning.flatten(u).items() if v is not None} for u in cfg.units()
    }


def apply(
    before: dict[str, dict[str, Value]], lines: list[PlannedLine], new: EnvironmentConfig
) -> dict[str, dict[str, Value]]:
    """What a reviewer reads off the lines, applied to the recorded fields."""
    out = {name: dict(values) for name, values in before.items()}
    for line in lines:
        if line.via is not None:
            continue  # a resolved value changed, not the text: nothing to apply
        if line.field == FIRST_DEPLOY_FIELD:
            unit = new.unit(line.service)
            assert unit is not None and line.after == planning.headline(unit)
            # A first deploy stages the unit whole: its fields are the new file's.
            out[line.service] = fields(new)[line.service]
        elif line.field == REMOVAL_FIELD:
            assert line.after is None
            del out[line.service]
        elif line.after is None:
            out[line.service].pop(line.field, None)
        else:
            out[line.service][line.field] = line.after
    return out


live_values = st.dictionaries(
    st.sampled_from(SERVICE_NAMES + DATABASE_NAMES),
    st.dictionaries(
        st.sampled_from(["image", "variables.LOG_LEVEL", "processes.web.replicas"]),
        st.one_of(st.none(), st.integers(0, 5), st.text(max_size=5)),
        max_size=3,
    ),
    max_size=4,
)


@SETTINGS
@given(old=files(), new=files(), env=st.sampled_from(ENVIRONMENTS), live=live_values)
def test_the_lines_turn_the_recorded_file_into_the_new_one(
    old: str, new: str, env: str, live: Mapping[str, Mapping[str, Value]]
) -> None:
    recorded, pushed = config(old, env), config(new, env)
    heads = {name: f"live-{name}" for name in live}
    lines = planning.plan(recorded, pushed, live, heads)
    assert apply(fields(recorded), lines, pushed) == fields(pushed)
    _check_lines(recorded, pushed, live, heads, lines)


@SETTINGS
@given(new=files(), env=st.sampled_from(ENVIRONMENTS))
def test_a_first_poll_stages_every_unit_as_a_first_deploy(new: str, env: str) -> None:
    pushed = config(new, env)
    lines = planning.plan(None, pushed, {}, {})
    assert [(ln.service, ln.kind) for ln in lines] == [
        (u.name, LineKind.FIRST_DEPLOY) for u in pushed.units()
    ]
    assert all(ln.before is None for ln in lines)
    assert apply({}, lines, pushed) == fields(pushed)


@SETTINGS
@given(text=files(), env=st.sampled_from(ENVIRONMENTS), live=live_values)
def test_the_same_file_again_stages_nothing(
    text: str, env: str, live: Mapping[str, Mapping[str, Value]]
) -> None:
    cfg = config(text, env)
    assert planning.plan(cfg, cfg, live, {n: "x" for n in live}) == []
    # Parsing the same text twice gives the same plan: nothing depends on identity.
    assert planning.plan(config(text, env), cfg, live, {}) == []


@settings(SETTINGS, max_examples=40)
@given(pushes=st.lists(files(), min_size=2, max_size=6), env=st.sampled_from(ENVIRONMENTS))
def test_a_sequence_of_pushes_composes(pushes: list[str], env: str) -> None:
    """Each push planned against the file recorded before it (as applying does): the fields
    reached by applying every plan in turn are the last file's."""
    configs = [config(text, env) for text in pushes]
    recorded: EnvironmentConfig | None = None
    state: dict[str, dict[str, Value]] = {}
    for cfg in configs:
        lines = planning.plan(recorded, cfg, {}, {})
        state = apply(state, lines, cfg)
        assert state == fields(cfg)
        recorded = cfg
    assert state == fields(configs[-1])


def _check_resolved(
    recorded: EnvironmentConfig, pushed: EnvironmentConfig, line: PlannedLine
) -> None:
    key = line.field.removeprefix("variables.")
    old, new = recorded.service(line.service), pushed.service(line.service)
    assert old is not None and new is not None
    was, now = resolved.of_file(recorded, old)[key], resolved.of_file(pushed, new)[key]
    assert was != now and line.after == now.shown("")
    assert line.kind is LineKind.VARIABLE_SET


def _check_lines(
    recorded: EnvironmentConfig,
    pushed: EnvironmentConfig,
    live: Mapping[str, Mapping[str, Value]],
    heads: Mapping[str, str],
    lines: list[PlannedLine],
) -> None:
    old = {u.name: planning.flatten(u) for u in recorded.units()}
    new = {u.name: planning.flatten(u) for u in pushed.units()}
    keys = [(ln.service, ln.field) for ln in lines]
    assert len(keys) == len(set(keys)), "one line per field"
    order = {name: i for i, name in enumerate(pushed.unit_names)}
    for line in lines:
        if line.field == REMOVAL_FIELD:
            assert line.service in old and line.service not in new
            assert line.kind is LineKind.REMOVAL
            gone = recorded.unit(line.service)
            assert gone is not None
            assert line.before == heads.get(line.service, planning.headline(gone))
            continue
        assert line.service in new
        if line.field == FIRST_DEPLOY_FIELD:
            assert line.kind is LineKind.FIRST_DEPLOY
            assert line.before == heads.get(line.service)
            continue
        before, after = old[line.service].get(line.field), new[line.service].get(line.field)
        if line.via is not None:
            _check_resolved(recorded, pushed, line)
            assert before == after, "a line through a reference has the same text"
            continue
        assert before != after, f"a line for {line.field}, which did not change"
        assert line.after == after
        assert line.before == live.get(line.service, {}).get(line.field), "before is the live value"
        assert line.kind is planning.line_kind(line.field, line.after)
        if line.field.startswith("variables."):
            expected = LineKind.VARIABLE_DELETE if after is None else LineKind.VARIABLE_SET
            assert line.kind is expected
        elif line.field.endswith(".replicas"):
            assert line.kind is LineKind.REPLICAS
    # Stable order: units as the new file lists them (removals last), the image first.
    staged = [ln for ln in lines if ln.field != REMOVAL_FIELD]
    positions = [order[ln.service] for ln in staged]
    assert positions == sorted(positions)
    for name in {ln.service for ln in staged}:
        mine = [ln.field for ln in staged if ln.service == name]
        if "image" in mine:
            assert mine[0] == "image"
        rest = [f for f in mine if f != "image"]
        assert rest == sorted(rest)
    removals = [i for i, ln in enumerate(lines) if ln.field == REMOVAL_FIELD]
    assert removals == list(range(len(lines) - len(removals), len(lines)))
    changed = {
        (name, f)
        for name in old.keys() & new.keys()
        for f in old[name].keys() | new[name].keys()
        if old[name].get(f) != new[name].get(f)
        and type(recorded.unit(name)) is type(pushed.unit(name))
    }
    assert changed <= set(keys), f"changed fields with no line: {changed - set(keys)}"


# -- resolved values (behaviour.md "Resolved values") ----------------------------------------

CHAIN = """
[environments.staging]
[services.a]
image = "registry.example.com/a@sha256:{a}"
[services.a.processes.web]
type = "http"
port = {port}
[services.a.variables]
K = "{k}"
[services.b]
image = "registry.example.com/b@sha256:{a}"
[services.b.variables]
X = "${{{{ a.K }}}}"
DB = "${{{{ db.DATABASE_URL }}}}"
[services.c]
image = "registry.example.com/c@sha256:{a}"
[services.c.variables]
Y = "${{{{ b.X }}}}/${{{{ host(a) }}}}"
[databases.db]
"""


def chain(k: str = "v1", port: int = 8080) -> EnvironmentConfig:
    found = validation.load(CHAIN.format(a="a" * 64, k=k, port=port)).environment("staging")
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("pushed", "expected"),
    [
        pytest.param(chain(), [], id="nothing changed"),
        pytest.param(
            chain(k="v2"),
            [
                ("a", "variables.K", "v1", "v2", None),
                ("b", "variables.X", "v1", "v2", "a.K"),
                (
                    "c",
                    "variables.Y",
                    "v1/a.ns.svc.cluster.local:8080",
                    "v2/a.ns.svc.cluster.local:8080",
                    "b.X",
                ),
            ],
            id="a value read through a chain",
        ),
        pytest.param(
            chain(port=9090),
            [
                ("a", "processes.web.port", 8080, 9090, None),
                (
                    "c",
                    "variables.Y",
                    "v1/a.ns.svc.cluster.local:8080",
                    "v1/a.ns.svc.cluster.local:9090",
                    "host(a)",
                ),
            ],
            id="the port behind host()",
        ),
    ],
)
def test_a_value_that_resolves_differently_is_a_line_with_its_reason(
    pushed: EnvironmentConfig, expected: list[tuple[object, ...]]
) -> None:
    recorded = chain()
    live = {
        "a": {"variables.K": "v1", "processes.web.port": 8080},
    }
    shown = {
        "b": {"variables.X": "v1", "variables.DB": "${{ db.DATABASE_URL }}"},
        "c": {"variables.Y": "v1/a.ns.svc.cluster.local:8080"},
    }
    lines = planning.plan(recorded, pushed, live, {}, shown, namespace="ns")
    assert [(ln.service, ln.field, ln.before, ln.after, ln.via) for ln in lines] == expected
