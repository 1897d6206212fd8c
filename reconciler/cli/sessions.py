"""``nebula login``, ``logout``, ``context list|use|unset`` and ``whoami``: which server this
command line acts through, and as whom (like ``kubectl config`` contexts and ``argocd login``).

A login checks the token with the server (``GET /api/v1/whoami``) before it saves anything;
``--sso`` signs in with the organization's identity provider instead (``cli.signon``) and
saves the session token the server gives.
Contexts live in ``$NEBULA_CONFIG_HOME/config.toml`` (``client.contexts``: mode 0600, written
atomically); nothing here ever prints a token.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from reconciler.cli import common, output, tables
from reconciler.client import contexts
from reconciler.errors import ConfigurationError, UnauthorizedError
from reconciler.lazy import Part

if TYPE_CHECKING:
    from reconciler.client.http import Api

# A loopback listener and a browser opener: loaded only by ``nebula login --sso``.
SIGN_ON = Part("reconciler.cli.signon", "sign_in")

CONTEXT_COLUMNS = (
    tables.Column("current", lambda r: "*" if r["current"] else ""),
    tables.Column("name", "name"),
    tables.Column("server", "server"),
    tables.Column("member", "member"),
)


def register(subparsers: common.Subparsers) -> None:
    p = common.command(subparsers, "login", login, "sign in to a Nebula server with a token")
    p.add_argument("url", help="the server, e.g. https://nebula.example.com")
    p.add_argument("--token-stdin", action="store_true", help="read the token from standard input")
    p.add_argument(
        "--sso", action="store_true", help="sign in with the organization's identity provider"
    )
    p.add_argument("--name", help="the context's name (default: the server's host)")
    p = common.command(subparsers, "logout", logout, "forget a context and its token")
    p.add_argument("name", nargs="?", help="default: the context in use")
    context = subparsers.add_parser("context", help="saved servers (nebula login)").add_subparsers(
        dest="context_command", metavar="COMMAND", required=True
    )
    p = common.command(context, "list", context_list, "the saved contexts (never their tokens)")
    common.add_json(p)
    p = common.command(context, "use", context_use, "act through this context from now on")
    p.add_argument("name")
    common.command(context, "unset", context_unset, "use no context: local mode again")
    p = common.command(subparsers, "whoami", whoami, "who this command line acts as, and where")
    common.add_json(p)


def _token(args: argparse.Namespace, server: str) -> str:
    if args.token_stdin or not sys.stdin.isatty():
        token = sys.stdin.readline().strip()
    else:
        token = common.read_secret(f"Token for {server}: ").strip()
    if not token:
        raise ConfigurationError(
            "no token given",
            hint="create one with nebula token create (or ask an admin), then: "
            f'printf %s "$TOKEN" | nebula login {server} --token-stdin',
        )
    return token


def login(args: argparse.Namespace) -> int:
    server = contexts.check_url(args.url)
    if not contexts.private_channel(server):
        output.warning(
            f"{server} is plain http: the token crosses the network unencrypted",
            "use https:// (plain http is for this machine, or a trusted network)",
        )
    saved = contexts.load(os.environ)  # a config that cannot be used says so before a prompt
    connect: Callable[[str, str | None], Api] = common.REMOTE.get()
    if args.sso:
        if args.token_stdin:
            raise ConfigurationError("--sso and --token-stdin are two ways to sign in: pick one")
        return _signed_on(args, server, saved, connect)
    token = _token(args, server)
    try:
        me = connect(server, token).get("/api/v1/whoami")
    except UnauthorizedError as exc:
        raise UnauthorizedError(
            exc.message, hint="check the token: nebula token create makes one (shown once)"
        ) from None
    name = args.name or urlsplit(server).netloc
    entry = contexts.Saved(name, server, token, str(me["member"]))
    contexts.save(contexts.with_saved(saved, entry))
    output.echo(
        f"Logged in to {server} as {me['member']} ({me['role']}); context {name!r} saved in "
        f"{saved.path} and in use"
    )
    return output.EXIT_OK


def _signed_on(
    args: argparse.Namespace,
    server: str,
    saved: contexts.Contexts,
    connect: Callable[[str, str | None], Api],
) -> int:
    api = connect(server, None)
    try:
        sign_in: Callable[[Api, str], dict[str, Any]] = SIGN_ON.get()
        answer = sign_in(api, server)
    finally:
        api.close()
    name = args.name or urlsplit(server).netloc
    entry = contexts.Saved(name, server, str(answer["token"]), str(answer["member"]))
    contexts.save(contexts.with_saved(saved, entry))
    output.echo(
        f"Logged in to {server} as {answer['member']} ({answer['role']}, via sso, until "
        f"{answer['expires_at']}); context {name!r} saved in {saved.path} and in use"
    )
    return output.EXIT_OK


def logout(args: argparse.Namespace) -> int:
    saved = contexts.load(os.environ)
    name = args.name or saved.current
    if name is None:
        raise ConfigurationError(
            "no context is in use", hint="nebula logout NAME (nebula context list)"
        )
    gone = saved.get(name)
    del saved.saved[name]
    if saved.current == name:
        saved.current = None
    contexts.save(saved)
    output.echo(
        f"Logged out of {gone.server}: context {name!r} and its token are forgotten here "
        "(the token itself still works until revoked: nebula token revoke ID)"
    )
    return output.EXIT_OK


def context_list(args: argparse.Namespace) -> int:
    saved = contexts.load(os.environ)
    rows: list[dict[str, Any]] = [
        {"name": s.name, "server": s.server, "member": s.member, "current": s.name == saved.current}
        for s in sorted(saved.saved.values(), key=lambda s: s.name)
    ]
    if args.json:
        output.print_json({"contexts": rows, "current": saved.current})
    elif rows:
        tables.show(rows, CONTEXT_COLUMNS)
    else:
        output.echo("No contexts: this command line is local (sign in with: nebula login URL).")
    return output.EXIT_OK


def context_use(args: argparse.Namespace) -> int:
    saved = contexts.load(os.environ)
    chosen = saved.get(args.name)
    saved.current = chosen.name
    contexts.save(saved)
    output.echo(f"Using context {chosen.name!r}: {chosen.server}")
    return output.EXIT_OK


def context_unset(args: argparse.Namespace) -> int:
    saved = contexts.load(os.environ)
    saved.current = None
    contexts.save(saved)
    output.echo("No context in use: this command line is local again (the store itself).")
    return output.EXIT_OK


def whoami(args: argparse.Namespace) -> int:
    api = common.api(args)
    me = api.get("/api/v1/whoami")
    me["server"] = api.where
    me["mode"] = "remote" if api.remote else "local"
    if args.json:
        output.print_json(me)
        return output.EXIT_OK
    grants = ", ".join(
        f"{g['grant']} {g['project']}" + (f"/{g['environment']}" if g["environment"] else "")
        for g in me["grants"]
    )
    output.echo(f"member  {me['member']}")
    output.echo(f"role    {me['role']}")
    output.echo(f"grants  {grants or '-'}")
    token = me.get("token")
    if token and token.get("via") == "sso":
        output.echo(f"session via sso, expires {token['expires_at']}")
    elif token:
        expires = f", expires {token['expires_at']}" if token["expires_at"] else ""
        output.echo(
            f"token   {token['id']}{' (' + token['name'] + ')' if token['name'] else ''}{expires}"
        )
    output.echo(f"server  {me['server'] or '(local: the store itself)'}")
    return output.EXIT_OK
