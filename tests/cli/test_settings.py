"""Settings that refuse nonsense, as a user sees them: an unknown ``NEBULA_*`` variable is a
warning naming the closest setting (the command goes on), an unknown key in the ``--config``
file an error with the same hint; a bad value names the setting and what it accepts, never a
secret's value; the README and ``nebula --help`` list every setting."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import serving, settings
from reconciler.cli import common, local, main, running
from reconciler.errors import ConfigurationError
from tests.plugins.nebula import Result
from tests.web.world import ServeProcess, serve_env

ROOT = Path(__file__).resolve().parents[2]
CANARY = "canary-s3cr3t-value"
DOCUMENTED = "hint: nebula --help lists every setting (so does the README, under Settings)\n"


@pytest.fixture
def environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A process environment with no ``NEBULA_*`` variable but the state directory."""
    for key in list(os.environ):
        if key.startswith("NEBULA_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("NEBULA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    local.reset()
    yield monkeypatch
    local.reset()


def nebula(capsys: pytest.CaptureFixture[str], *argv: str) -> Result:
    """``nebula ARGV`` in this process, reading its settings as a real run does."""
    try:
        code = main.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return Result(code, out, err)


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "nebula-server.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- unknown settings ------------------------------------------------------------------------


def test_an_unknown_variable_is_a_warning_with_the_closest_setting_and_the_command_goes_on(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ.setenv("NEBULA_SIMULATED_DELEY", "2s")
    added = nebula(capsys, "member", "add", "alice", "--role", "admin")
    assert (added.code, added.err) == (
        0,
        "warning: unknown setting NEBULA_SIMULATED_DELEY\n"
        "hint: did you mean NEBULA_SIMULATED_DELAY?\n",
    )
    listed = nebula(capsys, "member", "list", "--json")
    assert listed.code == 0
    assert [m["name"] for m in json.loads(listed.out)["members"]] == ["alice"]
    assert listed.err == "", "warned once per process, not once per command"


def test_an_unknown_variable_with_nothing_close_points_to_the_list_of_settings(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ.setenv("NEBULA_HOVERCRAFT", "eels")
    result = nebula(capsys, "member", "list")
    assert (result.code, result.err) == (
        0,
        "warning: unknown setting NEBULA_HOVERCRAFT\n" + DOCUMENTED,
    )


def test_warnings_are_printed_once_per_process(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ.setenv("NEBULA_WORKER", "4")
    args = running.build_parser().parse_args(["member", "list"])
    first, second = common.load_settings(args), common.load_settings(args)
    assert first == second
    assert capsys.readouterr().err == (
        "warning: unknown setting NEBULA_WORKER\nhint: did you mean NEBULA_WORKERS?\n"
    )
    assert [u.variable for u in common.unknown_settings()] == ["NEBULA_WORKER"]


def test_an_unknown_key_in_the_settings_file_is_an_error_with_the_closest_setting(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = config(tmp_path, 'cluster = "simulated"\nsimulated_deley = "2s"\n')
    result = nebula(capsys, "--config", path, "member", "list")
    assert (result.code, result.out, result.err) == (
        1,
        "",
        f"error: unknown setting simulated_deley in {path}\n"
        "hint: did you mean NEBULA_SIMULATED_DELAY?\n",
    )
    assert not (tmp_path / "state").exists(), "nothing was opened"


def test_the_settings_file_takes_keys_with_or_without_the_prefix_in_any_case_and_toml_types(
    tmp_path: Path,
) -> None:
    path = config(
        tmp_path,
        'NEBULA_Cluster = "kubernetes"\nPOLL_INTERVAL = 90\nnebula_workers = 4\n'
        'approval_ttl = "1d"\nstate_dir = "/srv/nebula"\nslack_channel = 12345\n',
    )
    loaded = settings.load(environ={"NEBULA_WORKERS": "2"}, config_file=path)
    assert loaded.cluster == "kubernetes"
    assert loaded.poll_interval.total_seconds() == 90
    assert loaded.workers == 2, "the environment wins over the file"
    assert loaded.approval_ttl.total_seconds() == 86400
    assert loaded.state_dir == Path("/srv/nebula")
    assert loaded.slack_channel == "12345"


def test_one_setting_given_twice_in_the_file_is_an_error(tmp_path: Path) -> None:
    path = config(tmp_path, 'cluster = "simulated"\nNEBULA_CLUSTER = "kubernetes"\n')
    with pytest.raises(ConfigurationError) as refused:
        settings.load(environ={}, config_file=path)
    assert str(refused.value) == f"cluster and NEBULA_CLUSTER in {path} are the same setting"
    assert refused.value.hint == "keep one of them"


# -- values that make no sense ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "lines"),
    [
        (
            "NEBULA_CLUSTER",
            "k8s",
            "error: NEBULA_CLUSTER must be simulated or kubernetes, not 'k8s'\n"
            "hint: unset it for the default, simulated\n",
        ),
        (
            "NEBULA_CLUSTER",
            "kubernets",
            "error: NEBULA_CLUSTER must be simulated or kubernetes, not 'kubernets'\n"
            "hint: did you mean kubernetes?\n",
        ),
        (
            "NEBULA_APPROVAL_TTL",
            "5 minutes",
            "error: NEBULA_APPROVAL_TTL must be a duration, not '5 minutes'\n"
            "hint: write a number and a unit: 90s, 5m, 24h or 1d\n",
        ),
        (
            "NEBULA_WORKERS",
            "eight",
            "error: NEBULA_WORKERS must be a whole number, 1 or more, not 'eight'\n"
            "hint: write it in digits, e.g. 8\n",
        ),
        (
            "NEBULA_WORKERS",
            "0",
            "error: NEBULA_WORKERS must be a whole number, 1 or more, not '0'\n"
            "hint: write it in digits, e.g. 8\n",
        ),
        (
            "NEBULA_STATE_DIR",
            "",
            "error: NEBULA_STATE_DIR is empty\nhint: give a path, or unset it (default .nebula)\n",
        ),
        (
            "NEBULA_MAX_CONFIG_SIZE",
            "1 MB",
            "error: NEBULA_MAX_CONFIG_SIZE must be a size, not '1 MB'\n"
            "hint: write a number of bytes, or a number and a unit: 512KiB, 1MiB, 2GiB\n",
        ),
        (
            "NEBULA_MAX_CONFIG_SIZE",
            "\u00b2KiB",  # a superscript two passes str.isdigit()
            "error: NEBULA_MAX_CONFIG_SIZE must be a size, not '\u00b2KiB'\n"
            "hint: write a number of bytes, or a number and a unit: 512KiB, 1MiB, 2GiB\n",
        ),
    ],
)
def test_a_bad_value_names_the_setting_and_what_it_accepts(
    environ: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    lines: str,
) -> None:
    environ.setenv(variable, value)
    result = nebula(capsys, "member", "list")
    assert (result.code, result.out, result.err) == (1, "", lines)


def test_a_bad_value_in_the_file_names_the_key_and_the_file(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = config(tmp_path, "readiness_timeout = true\n")
    result = nebula(capsys, "member", "list", "--config", path)
    assert (result.code, result.err) == (
        1,
        f"error: readiness_timeout in {path} must be a duration, not 'true'\n"
        "hint: write a number and a unit: 90s, 5m, 24h or 1d\n",
    )


def test_booleans_are_true_or_false() -> None:
    flag = settings.Spec("dry_run", settings.Kind.BOOL, "false", "test only")
    assert settings.convert(flag, True, "dry_run in F") is True
    assert settings.convert(flag, "no", "NEBULA_DRY_RUN") is False
    with pytest.raises(
        ConfigurationError, match=r"^NEBULA_DRY_RUN must be true or false, not 'maybe'$"
    ):
        settings.convert(flag, "maybe", "NEBULA_DRY_RUN")


# -- secrets ---------------------------------------------------------------------------------

SECRETS = [spec for spec in settings.TABLE if spec.secret]


def test_the_secret_settings_are_the_ones_that_hold_credentials() -> None:
    assert {spec.variable for spec in SECRETS} == {
        "NEBULA_DATABASE_URL",
        "NEBULA_SECRET_KEY",
        "NEBULA_SLACK_BOT_TOKEN",
        "NEBULA_SLACK_SIGNING_SECRET",
        "NEBULA_GIT_CREDENTIALS",
        "NEBULA_GIT_SSH_KEY_PASSPHRASE",
        "NEBULA_SMTP_URL",
        "NEBULA_OIDC_CLIENT_SECRET",
    }


def test_secrets_are_never_echoed_in_warnings_or_errors(
    environ: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    environ.setenv("NEBULA_SLACK_BOT_TOKN", CANARY)
    warned = nebula(capsys, "member", "list")
    assert (warned.code, warned.err) == (
        0,
        "warning: unknown setting NEBULA_SLACK_BOT_TOKN\n"
        "hint: did you mean NEBULA_SLACK_BOT_TOKEN?\n",
    )
    environ.delenv("NEBULA_SLACK_BOT_TOKN")
    local.reset()  # each command below as a new process
    misspelt = config(tmp_path, f'git_ssh_key_pasphrase = "{CANARY}"\n')
    refused = nebula(capsys, "member", "list", "--config", misspelt)
    assert (refused.code, refused.err) == (
        1,
        f"error: unknown setting git_ssh_key_pasphrase in {misspelt}\n"
        "hint: did you mean NEBULA_GIT_SSH_KEY_PASSPHRASE?\n",
    )
    local.reset()
    shaped_wrong = config(tmp_path, f'secret_key = ["{CANARY}"]\n')
    refused = nebula(capsys, "member", "list", "--config", shaped_wrong)
    assert (refused.code, refused.err) == (
        1,
        f"error: secret_key in {shaped_wrong} is a list\n"
        "hint: give a string, a number or true/false\n",
    )


def test_a_bad_secret_value_names_the_setting_not_the_value() -> None:
    hidden = settings.Spec("token_ttl", settings.Kind.DURATION, "1h", "test only", secret=True)
    with pytest.raises(ConfigurationError) as refused:
        settings.convert(hidden, CANARY, "NEBULA_TOKEN_TTL")
    assert str(refused.value) == (
        "NEBULA_TOKEN_TTL must be a duration, not the value given (a secret, not shown)"
    )


def test_secrets_stay_out_of_the_repr_and_out_of_the_serve_logs() -> None:
    given = {spec.name: f"{CANARY}-{spec.name}" for spec in SECRETS}
    given["database_url"] = f"postgresql+psycopg://nebula:{CANARY}%21@db.example/nebula"
    loaded = settings.Settings(**given)
    assert CANARY not in repr(loaded)
    scrubbed = serving.secrets_of(loaded)
    for name, value in given.items():
        assert value in scrubbed, name
    assert f"{CANARY}%21" in scrubbed and f"{CANARY}!" in scrubbed, "the database password"


# -- where the settings are listed ------------------------------------------------------------


def readme_row(spec: settings.Spec) -> str:
    default = f"`{spec.default}`" if spec.default else ""
    secret = " (secret)" if spec.secret else ""
    return f"| `{spec.variable}` | {default} | {spec.about}{secret} |"


def test_the_readme_lists_exactly_the_settings_nebula_reads() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Settings\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `NEBULA_")]
    expected = [readme_row(spec) for spec in settings.TABLE]
    assert rows == expected, "README.md, Settings: the table should read\n" + "\n".join(expected)


def test_help_lists_every_setting_with_its_default() -> None:
    text = running.build_parser().format_help()
    for spec in settings.TABLE:
        default = f" (default {spec.default})" if spec.default else ""
        assert re.search(rf"^  {spec.variable}{re.escape(default)}( \(secret\))?$", text, re.M)


# -- nebula serve ------------------------------------------------------------------------------


def test_serve_prints_and_logs_an_unknown_setting_once(tmp_path: Path) -> None:
    server = ServeProcess(serve_env(tmp_path, simulated_deley="2s"), tmp_path / "serve.log")
    server.start()
    code, _ = server.stop()
    assert code == 0
    lines = server.logs().splitlines()
    plain = [line for line in lines if not line.startswith("{")]
    assert plain[:2] == [
        "warning: unknown setting NEBULA_SIMULATED_DELEY",
        "hint: did you mean NEBULA_SIMULATED_DELAY?",
    ]
    assert sum(line.startswith("warning:") for line in plain) == 1
    logged = [
        entry
        for entry in (json.loads(line) for line in lines if line.startswith("{"))
        if entry["event"].startswith("unknown setting")
    ]
    assert [(e["level"], e["event"], e["setting"], e["hint"]) for e in logged] == [
        (
            "warning",
            "unknown setting NEBULA_SIMULATED_DELEY",
            "NEBULA_SIMULATED_DELEY",
            "did you mean NEBULA_SIMULATED_DELAY?",
        )
    ]
