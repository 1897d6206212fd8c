"""Every file in fixtures/invalid reports exactly the problems its ``# expect:`` header lists.

The same files drive ``nebula validate``: what a user sees is ``FILE:LINE:COL: message``, a
``hint:`` line under it, and exit status 1 when there is an error (0 with warnings only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.errors import InvalidFileError
from reconciler.model import validation
from reconciler.model.problems import Code, Severity
from tests.model import samples

FIXTURES = samples.invalid_fixtures()
IDS = [p.stem for p in FIXTURES]


def test_there_is_a_fixture_per_error_the_spec_lists() -> None:
    names = {p.stem for p in FIXTURES}
    required = {
        "syntax",
        "unknown-key",
        "unknown-key-nested",
        "wrong-type",
        "invalid-slug",
        "unknown-environment",
        "unknown-reference",
        "unknown-reference-database",
        "unknown-dependency",
        "self-dependency",
        "dependency-cycle",
        "missing-port",
        "invalid-schedule-missing",
        "invalid-schedule",
        "multiple-primary",
        "unknown-instance-size",
        "malformed-size",
        "invalid-image",
        "image-tag",
        "volume-without-downtime",
        "invalid-reference",
        "several-errors",
        "unknown-environment-promote-from",
        "self-promotion",
        "promotion-cycle",
        "soak-without-promote-from",
        "malformed-duration",
    }
    assert required <= names


def test_every_problem_code_is_shown_by_some_fixture() -> None:
    shown = {
        p.code
        for path in FIXTURES
        for p in validation.check(path.read_text(encoding="utf-8"), str(path))[1]
    }
    assert shown == set(Code)


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_fixture_reports_exactly_its_expected_problems(path: Path) -> None:
    expected = samples.expected(path)
    assert expected.lines, f"{path.name} has no '# expect:' line"
    project, problems = validation.check(path.read_text(encoding="utf-8"), str(path))
    assert [samples.shown(p) for p in problems] == list(expected.lines)
    assert all(p.hint for p in problems), "every problem tells the user how to fix it"
    assert all(p.location.path == str(path) for p in problems)
    assert (project is not None) == expected.warnings_only


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.stem != "several-errors"], ids=str)
def test_fixture_is_named_after_the_code_it_shows(path: Path) -> None:
    problems = validation.check(path.read_text(encoding="utf-8"), str(path))[1]
    for problem in problems:
        assert path.stem == problem.code or path.stem.startswith(f"{problem.code}-")


def test_several_errors_are_all_reported_in_file_order() -> None:
    path = samples.INVALID / "several-errors.toml"
    problems = validation.check(path.read_text(encoding="utf-8"), str(path))[1]
    errors = [p for p in problems if p.severity is Severity.ERROR]
    assert len(errors) >= 5
    assert len({p.code for p in errors}) >= 5
    positions = [(p.location.line, p.location.col) for p in problems]
    assert positions == sorted(positions)


def test_load_raises_with_every_error() -> None:
    path = samples.INVALID / "several-errors.toml"
    with pytest.raises(InvalidFileError) as raised:
        validation.load(path.read_text(encoding="utf-8"), str(path))
    assert len(raised.value.problems) == len(samples.expected(path).lines) - 1  # minus the warning
    assert raised.value.code == "configuration"
    assert f"{path}:33:31: services.api.processes.web.instance_size is 'giant'" in str(raised.value)


# -- nebula validate --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [p for p in FIXTURES if not samples.expected(p).warnings_only], ids=str
)
def test_cli_prints_each_error_with_its_hint_and_exits_1(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = samples.expected(path)
    status = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    lines = err.splitlines()
    errors = sum(": warning: " not in line for line in expected.lines)
    assert lines[-1] == f"{path}: {errors} error{'s' if errors != 1 else ''}"
    reported = lines[:-1]
    assert reported[0::2] == [f"{path}:{line}" for line in expected.lines]
    hints = reported[1::2]
    assert len(hints) == len(expected.lines)
    assert all(h.startswith("  hint: ") and len(h) > len("  hint: ") for h in hints)


@pytest.mark.parametrize("name", ["image-tag", "no-environments"])
def test_cli_prints_warnings_and_exits_0(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = samples.INVALID / f"{name}.toml"
    (warning,) = samples.expected(path).lines
    status = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert status == 0
    assert err.splitlines()[0] == f"{path}:{warning}"
    assert err.splitlines()[1].startswith("  hint: ")
    assert out.startswith(f"{path}: valid")


def test_image_tag_warning_hint_says_to_pin_a_digest(capsys: pytest.CaptureFixture[str]) -> None:
    path = samples.INVALID / "image-tag.toml"
    main(["validate", str(path)])
    err = capsys.readouterr().err
    assert "warning: image 'registry.example.com/shop/api:1.4.2' is pinned by tag" in err
    assert "hint: a release is meant to be immutable: use name@sha256:<64 hex digits>" in err


def test_cli_json_lists_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    path = samples.INVALID / "several-errors.toml"
    status = main(["validate", "--json", str(path)])
    document = json.loads(capsys.readouterr().out)
    assert status == 1
    assert document["path"] == str(path)
    assert document["valid"] is False
    assert len(document["problems"]) == len(samples.expected(path).lines)
    first = document["problems"][0]
    assert first == {
        "path": str(path),
        "line": 16,
        "col": 9,
        "severity": "warning",
        "code": "image-tag",
        "message": "image 'registry.example.com/shop/api:latest' is pinned by tag, not by digest",
        "hint": "a release is meant to be immutable: use name@sha256:<64 hex digits>",
    }
    severities = {p["severity"] for p in document["problems"]}
    assert severities == {"error", "warning"}
    for problem in document["problems"]:
        assert set(problem) == set(first)
        assert isinstance(problem["line"], int) and isinstance(problem["col"], int)


def test_cli_json_of_a_valid_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = samples.PROJECTS / "shop" / "nebula.toml"
    status = main(["validate", "--json", str(path)])
    assert status == 0
    assert json.loads(capsys.readouterr().out) == {
        "path": str(path),
        "valid": True,
        "problems": [],
    }


def test_cli_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nebula.toml"
    with pytest.raises(SystemExit) as exited:
        main(["validate", str(missing)])
    assert exited.value.code == 1
    assert capsys.readouterr().err == f"error: {missing}: no such file\n"


def test_cli_reads_the_path_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nebula.toml"
    path.write_text(samples.ENVIRONMENTS + samples.service("api") + "replcas = 2\n")
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().err.splitlines()[:2] == [
        f"{path}:12:1: unknown key 'replcas' in [services.api.processes.web]",
        "  hint: did you mean 'replicas'? allowed here: type, command, port, readiness_path, "
        "replicas, instance_size, stabilization_seconds, primary, schedule, cpu, memory, "
        "autoscale, liveness_path, shutdown_grace, domains",
    ]
