"""Cron schedules as a Kubernetes CronJob accepts them, and where TOML syntax errors point."""

from __future__ import annotations

import pytest

from reconciler.model import schedules
from reconciler.model.problems import Code
from tests.model import samples

VALID = [
    "0 3 * * *",
    "*/5 * * * *",
    "0 0 1 1 *",
    "30 2 * * mon-fri",
    "0 9 * JAN,jul sun",
    "0 3 ? * *",
    "0-30/10 8-18 1-31/2 1-12 0-6",
    "5/15 * * * *",
]


@pytest.mark.parametrize("schedule", VALID)
def test_valid_schedule(schedule: str) -> None:
    assert schedules.problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        ("", "it has 0 fields, not 5"),
        ("0 3 * *", "it has 4 fields, not 5"),
        ("0 0 3 * * *", "it has 6 fields, not 5"),
        ("@daily", "it has 1 field, not 5"),
        ("60 * * * *", "the minute field '60' must be within 0-59"),
        ("0 24 * * *", "the hour field '24' must be within 0-23"),
        ("0 3 0 * *", "the day of month field '0' must be within 1-31"),
        ("0 3 * 13 *", "the month field '13' must be within 1-12"),
        # croniter takes these; the Kubernetes CronJob controller does not:
        ("0 3 * * 7", "the day of week field '7' must be within 0-6"),
        ("0 0 L * *", "the day of month field 'L' must be within 1-31"),
        ("0 0 15W * *", "the day of month field '15W' must be within 1-31"),
        ("0 0 * * mon#1", "the day of week field 'mon#1' is not a number, range, list or step"),
        ("R 3 * * *", "the minute field 'R' must be within 0-59"),
        (
            "0 3 * * mon-sun",
            "the day of week field 'mon-sun' has a range that ends before it starts",
        ),
        ("30-10 * * * *", "the minute field '30-10' has a range that ends before it starts"),
        ("*/0 * * * *", "the minute field '*/0' has a step of 0"),
        ("1,,2 * * * *", "the minute field '1,,2' is not a number, range, list or step"),
        ("0 3 * jan-foo *", "the month field 'jan-foo' must be within 1-12"),
        ("mon 3 * * *", "the minute field 'mon' must be within 0-59"),
        (
            "\u0661 3 * * *",
            "the minute field '\u0661' is not a number, range, list or step",
        ),  # an Arabic-Indic 1
    ],
)
def test_invalid_schedule(schedule: str, reason: str) -> None:
    assert schedules.problem(schedule) == reason


def test_invalid_schedule_in_a_file() -> None:
    text = samples.ENVIRONMENTS + samples.service(
        "api", extra='\n[services.api.processes.nightly]\ntype = "cron"\nschedule = "0 3 * * 7"\n'
    )
    line = text.splitlines().index('schedule = "0 3 * * 7"') + 1
    (problem,) = samples.problems(text)
    assert samples.shown(problem) == (
        f"{line}:12: '0 3 * * 7' is not a valid cron schedule: "
        "the day of week field '7' must be within 0-6"
    )
    assert problem.code is Code.INVALID_SCHEDULE
    assert problem.hint == schedules.HINT


@pytest.mark.parametrize(
    ("text", "shown", "hint"),
    [
        ('a = "x', '1:7: invalid TOML: unexpected end of file', "check quotes"),
        ("a = [1,\n", "1:8: invalid TOML: unexpected end of file", "check quotes"),
        ("x", "1:2: invalid TOML: unexpected end of file", "check quotes"),
        ("[environments.staging]\n[environments.staging]\n",
         '2:1: invalid TOML: key "staging" already exists.', "a key or table may be defined only once"),
        ("a = 1\na = 2", '2:1: invalid TOML: key "a" already exists.', "a key or table may be"),
        ("[a]\nb = 1\n[a.b]\n", '1:1: invalid TOML: key "b" already exists.', "a key or table may"),
        ("\n\n= 1\n", "3:1: invalid TOML: empty key", "check quotes"),
        ("a = 1979-02-30\n", "1:14: invalid TOML: invalid date", "check quotes"),
    ],
)  # fmt: skip
def test_syntax_error_points_at_a_real_place(text: str, shown: str, hint: str) -> None:
    (problem,) = samples.problems(text)
    assert problem.code is Code.SYNTAX
    assert samples.shown(problem) == shown
    assert problem.hint.startswith(hint)
