"""Saved contexts (``client.contexts``): what ``nebula login`` writes is read back exactly,
whatever a name or a server holds; the file is its owner's only; a URL with credentials in it
is refused before anything is saved; ``context use|unset|list`` and ``logout`` do what they
say and never print a token."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.client import contexts
from reconciler.errors import ConfigurationError, NotFoundError
from tests.plugins.nebula import Nebula

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@given(name=TEXT, server=TEXT, token=TEXT, member=TEXT)
def test_what_is_written_is_read_back(name: str, server: str, token: str, member: str) -> None:
    saved = contexts.Contexts(Path("/nowhere/config.toml"), current=name)
    saved.saved[name] = contexts.Saved(name, server, token, member)
    data = tomllib.loads(contexts.dumps(saved))
    assert data["current"] == name
    assert data["contexts"][name] == {"server": server, "token": token, "member": member}


def test_the_file_is_the_owners_only_and_replaced_whole(tmp_path: Path) -> None:
    environ = {"NEBULA_CONFIG_HOME": str(tmp_path / "home")}
    first = contexts.with_saved(contexts.load(environ), contexts.Saved("a", "http://a", "t1"))
    contexts.save(first)
    path = tmp_path / "home" / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    second = contexts.with_saved(contexts.load(environ), contexts.Saved("b", "http://b", "t2"))
    contexts.save(second)
    again = contexts.load(environ)
    assert (again.current, sorted(again.saved)) == ("b", ["a", "b"])
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"], "no temporary file left"
    assert again.for_server("http://a/") == again.saved["a"]
    with pytest.raises(NotFoundError) as missing:
        again.get("c")
    assert "contexts: a, b" in missing.value.message


@pytest.mark.parametrize(
    "url", ["ftp://nebula.example.com", "nebula.example.com", "https://bob:pw@nebula.example.com"]
)
def test_a_server_url_must_be_plain_http_or_https(url: str) -> None:
    with pytest.raises(ConfigurationError):
        contexts.check_url(url)


def test_contexts_are_listed_used_and_unset_without_their_tokens(
    nebula: Nebula, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {"NEBULA_CONFIG_HOME": str(tmp_path / "nebula-config")}
    made = contexts.Contexts(Path(environ["NEBULA_CONFIG_HOME"]) / "config.toml")
    made.saved["prod"] = contexts.Saved("prod", "https://prod.example", "nbl_prodsecret", "bob")
    made.saved["stage"] = contexts.Saved("stage", "https://stage.example", "nbl_stagesecret", "bo")
    contexts.save(made)
    listed = nebula.ok("context list -o json")
    assert "secret" not in listed.out
    assert json.loads(listed.out) == {
        "contexts": [
            {"name": "prod", "server": "https://prod.example", "member": "bob", "current": False},
            {"name": "stage", "server": "https://stage.example", "member": "bo", "current": False},
        ],
        "current": None,
    }
    assert nebula.ok("context use stage").out == "Using context 'stage': https://stage.example\n"
    table = nebula.ok("context list").out.splitlines()
    assert table[0].split() == ["CURRENT", "NAME", "SERVER", "MEMBER"]
    assert table[2].split()[:2] == ["*", "stage"]
    assert "secret" not in "\n".join(table)
    nebula.ok("context unset")
    assert contexts.load(environ).current is None
    assert nebula.ok("whoami -o json").json["mode"] == "local"
    nebula.ok("logout prod")
    assert sorted(contexts.load(environ).saved) == ["stage"]
    nobody = nebula.cli("logout")
    assert (nobody.code, nobody.err.splitlines()[0]) == (1, "error: no context is in use")


@pytest.mark.parametrize(
    ("url", "private"),
    [("https://nebula.example.com", True), ("http://127.0.0.1:8080", True),
     ("http://localhost:8080", True), ("http://[::1]:8080", True),
     ("http://nebula.example.com", False), ("http://10.0.0.5:8080", False)],
)  # fmt: skip
def test_login_warns_when_the_token_would_cross_the_network_in_clear(
    url: str, private: bool
) -> None:
    assert contexts.private_channel(url) is private


def test_a_server_url_is_kept_as_plainly_as_it_is_connected_to() -> None:
    assert contexts.check_url("HTTPS://Nebula.Example.COM/") == "https://nebula.example.com"
