"""``nebula login URL --sso`` (the command as a process) against Nebula signing people in with
a real OpenID Provider: the device authorization grant approved in headless Chromium, and,
where the provider has no device endpoint, the code flow on a loopback listener; ``whoami``
says ``via sso`` and when it ends, and an expired session says to sign in again."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra.oidcprovider import OpenIDProvider
from tests.plugins.nebula import nebula_with
from tests.web.signons import serving
from tests.web.world import ThreadedServer, nebula_command

pytestmark = pytest.mark.browser


def _env(tmp_path: Path) -> dict[str, str]:
    """A laptop: no store, only its contexts; this worktree's code (PYTHONPATH carries on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
    env.update(NEBULA_CONFIG_HOME=str(tmp_path / "laptop"), NEBULA_STATE_DIR=str(tmp_path / "none"))
    return env


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*nebula_command(), *args], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


@contextmanager
def _login(tmp_path: Path, url: str) -> Iterator[subprocess.Popen[str]]:
    """``nebula login URL --sso`` running; killed if the test fails before it ends."""
    with subprocess.Popen(
        [*nebula_command(), "login", url, "--sso", "--name", "work"],
        env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as login:  # fmt: skip
        try:
            yield login
        finally:
            login.kill()


def _rest(login: subprocess.Popen[str]) -> tuple[str, str]:
    """What the command prints after what was read, once it ended (``communicate`` would skip
    what the readline before it buffered)."""
    login.wait(timeout=30)
    assert login.stdout is not None and login.stderr is not None
    return login.stdout.read(), login.stderr.read()


def test_a_device_sign_in_approved_in_the_browser(
    tmp_path: Path, oidc_provider: OpenIDProvider, browser: Any
) -> None:
    with serving(tmp_path, oidc_provider) as sso:
        with _login(tmp_path, sso.url) as login:
            assert login.stdout is not None
            said = login.stdout.readline()
            found = re.fullmatch(r"To sign in, open (\S+) and enter the code (\S+)\n", said)
            assert found is not None, said
            page = browser.new_page()
            try:
                page.goto(found.group(1))
                page.fill("input[name=user_code]", found.group(2))
                page.click("text=Continue")
                assert page.text_content("#user-code") == found.group(2)
                page.click("text=Continue")  # this is my device
                page.fill("input[name=login]", "alice")
                page.fill("input[name=password]", "any password")
                page.click("button.login-submit")
                page.wait_for_selector("#done")
            finally:
                page.close()
            out, err = _rest(login)
        assert login.returncode == 0, err
        config = tmp_path / "laptop" / "config.toml"
        lines = (said + out).splitlines()
        assert lines[1] == f"(or open {found.group(1)}?user_code={found.group(2)})", lines
        assert re.fullmatch(
            rf"Logged in to {sso.url} as alice \(admin, via sso, until \S+Z\); context 'work' "
            rf"saved in {config} and in use",
            lines[-1],
        ), lines[-1]
        assert stat.S_IMODE(config.stat().st_mode) == 0o600

        me = _run(tmp_path, "whoami")
        assert me.returncode == 0, me.stderr
        assert "role    admin" in me.stdout
        assert re.search(r"^session via sso, expires \S+Z$", me.stdout, re.MULTILINE), me.stdout
        assert '"via": "sso"' in _run(tmp_path, "whoami", "-o", "json").stdout

        sso.nebula.clock.advance(hours=12, seconds=1)
        expired = _run(tmp_path, "whoami")
        assert expired.returncode == 1
        assert expired.stderr.splitlines() == [
            "error: the server refused the token (401): session expired: sign in again",
            f"hint: sign in again: nebula login {sso.url} --sso",
        ]
        # No code, token or secret of the sign-in reached the server's log.
        token = re.search(r'token = "([^"]+)"', config.read_text()).group(1)  # type: ignore[union-attr]
        assert token not in sso.log.getvalue() and found.group(2) not in sso.log.getvalue()


def test_without_a_device_endpoint_the_answer_comes_to_a_loopback_listener(
    tmp_path: Path, oidc_provider_without_device: OpenIDProvider
) -> None:
    with serving(tmp_path, oidc_provider_without_device) as sso:
        with _login(tmp_path, sso.url) as login:
            assert login.stdout is not None
            assert login.stdout.readline() == (
                "To sign in, open this page in a browser on this machine:\n"
            )
            url = login.stdout.readline().strip()
            assert url.startswith(f"{sso.provider.issuer}/auth?")
            assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
            with httpx.Client() as person:
                back = sso.provider.sign_in(person, url, "bob")
                assert re.match(r"http://127\.0\.0\.1:[0-9]+/callback\?code=", back)
                assert "go back to your terminal" in person.get(back).text
            out, err = _rest(login)
        assert login.returncode == 0, err
        assert f"Logged in to {sso.url} as bob (member, via sso, until " in out
        assert "via sso" in _run(tmp_path, "whoami").stdout


def test_a_server_without_single_sign_on_says_so(tmp_path: Path) -> None:
    for nebula in nebula_with(tmp_path):
        with ThreadedServer(nebula.ctx) as server:
            refused = _run(tmp_path, "login", server.url, "--sso")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == f"error: {server.url} does not offer single sign-on"
