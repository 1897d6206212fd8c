"""Every input that takes a duration, fed the ones that overflowed (issue 26): one parser, at
most 10 years, a clear error naming where it was given, never a traceback; and what Nebula adds
a duration to (a poll's time, a token's creation, a webhook's window) stays a date."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures import loading
from reconciler import settings
from reconciler.durations import LONGEST, PATTERN, TEXT_LONGEST, parse_duration
from reconciler.errors import ConfigurationError
from tests.plugins import people
from tests.plugins.doors import Door
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula


@pytest.fixture
def org(nebula: Nebula) -> Nebula:
    with nebula.ctx.db.transaction() as session:
        people.member(session, nebula.clock, "olga", "owner")
    return nebula


TOO_LONG = ["1000000000d", "999999999d", "3651d", "9" * 400 + "s"]


@pytest.mark.parametrize("text", TOO_LONG)
def test_the_parser_refuses_more_than_ten_years(text: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_duration(text, setting="--timeout")
    assert "longer than 10 years" in refused.value.message
    assert parse_duration("3650d") == LONGEST


@pytest.mark.parametrize("text", TOO_LONG[:2])
@pytest.mark.parametrize(
    "spec", [s for s in settings.TABLE if s.kind is settings.Kind.DURATION], ids=str
)
def test_every_duration_setting_says_which_one(text: str, spec: settings.Spec) -> None:
    with pytest.raises(ConfigurationError) as refused:
        settings.load(environ={spec.variable: text})
    assert refused.value.message == (
        f"{spec.variable} must be a duration of at most 10 years, not {text!r}"
    )


@pytest.mark.parametrize("text", TOO_LONG[:2])
def test_a_soak_too_long_is_a_problem_at_its_place(nebula: Nebula, text: str) -> None:
    path = nebula.tmp / "nebula.toml"
    path.write_text(
        loading.project("gated").replace('soak = "30m"', f'soak = "{text}"'), encoding="utf-8"
    )
    assert f'soak = "{text}"' in path.read_text()
    checked = nebula.cli(f"validate {path}")
    assert checked.code == 1 and "Traceback" not in checked.err
    assert f"soak is '{text}', longer than 10 years" in checked.err
    assert checked.err.splitlines()[0].startswith(f"{path}:")


@pytest.mark.parametrize(
    ("command", "code", "said"),
    [
        ("wait 1 --timeout 1000000000d", 2, "argument --timeout: '1000000000d' is longer than 10 years"),
        ("project add other --repo /srv/x --interval 1000000000d", 1, "--interval: '1000000000d' is longer than 10 years"),
        ("project set shop interval 1000000000d", 1, "is longer than 10 years"),
        ("project set shop webhook_limit 999999999d", 1, "is longer than 10 years"),
        ("token create --as olga --expires 1000000000d", 2, "argument --expires: '1000000000d' is longer than 10 years"),
    ],
)  # fmt: skip
def test_every_option_and_project_setting_says_so_in_one_line(
    nebula: Nebula, command: str, code: int, said: str
) -> None:
    nebula.ok("member add olga --role owner")
    nebula.ok("project add shop --repo /srv/shop --no-check")
    refused = nebula.cli(command)
    assert refused.code == code
    assert said in refused.err.splitlines()[0] and "Traceback" not in refused.err


def test_what_a_duration_is_added_to_stays_a_date(nebula: Nebula, git_repo: GitRepo) -> None:
    """The longest interval and webhook window a project takes, then a poll: no overflow."""
    git_repo.commit({"nebula.toml": loading.project("hello")}, "Hello")
    nebula.ok(f"project add shop --repo {git_repo.url} --interval 3650d")
    nebula.ok("project set shop webhook_limit 3650d")
    nebula.ok("reconcile --until-idle --timeout 1m")
    (project,) = nebula.json("project list")["projects"]
    assert project["next_poll_at"] > project["last_polled_at"]
    assert nebula.ok("audit --since 1000000000d -o json").json["events"], "everything"
    # A token that lives as long as anything may.
    nebula.ok("member add olga --role owner")
    made = nebula.json("token create --as olga --expires 3650d")
    expires = (nebula.clock.now() + LONGEST).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert made["expires_at"] == expires


@given(st.text(alphabet="0123456789.smhd \t", max_size=TEXT_LONGEST))
def test_the_api_takes_exactly_what_the_parser_reads(text: str) -> None:
    """The API's parameters declare the parser's grammar: what a command accepts, a server
    takes (``--expires 1h30m`` was once a 422 remotely and fine locally)."""
    try:
        parse_duration(text, longest=None)
        reads = True
    except ConfigurationError:
        reads = False
    except OverflowError:
        reads = True  # a duration still: too long is said by whoever takes it
    assert (re.search(PATTERN, text) is not None and not text.endswith("\n")) == reads, text


@pytest.mark.parametrize(
    "command",
    ["token create --expires 1h30m", "token create --expires 90s", "token create --expires 3600",
     "audit --since 1.5h", "audit --since 999999999999d", "project add x --repo /srv/x --interval 1.5m --no-check"],
)  # fmt: skip
def test_a_duration_the_command_takes_is_taken_through_either_door(
    door: Door, org: Nebula, command: str
) -> None:
    done = door.act("olga", command)
    assert done.code == 0, done.err
