"""The commands there are: which module registers each, and the line ``nebula --help`` shows
for it; the root parser (the global options and the settings); and ``nebula --help`` itself.

``nebula --help`` is printed from this table, without importing a command module or building
the 60 parsers behind the commands (that is what a usage error or ``completion`` does).
tests/cli/test_commands.py checks the table against the parsers the modules build, and this
help against the whole parser's, so they cannot drift apart.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

import reconciler
from reconciler import settings
from reconciler.cli import output
from reconciler.cli.parsing import Parser

VERSION = f"nebula {reconciler.__version__}"

# Module -> {command: its line in ``nebula --help``}, in the order the help lists them.
COMMANDS: dict[str, dict[str, str]] = {
    "reconciler.cli.offline": {
        "validate": "validate a nebula.toml",
        "render": "print the Kubernetes manifests a nebula.toml would create",
        "init": "write a commented starter nebula.toml",
    },
    "reconciler.cli.imports": {
        "import": "write a nebula.toml from what a team has (a Compose file)",
    },
    "reconciler.cli.sessions": {
        "login": "sign in to a Nebula server with a token",
        "logout": "forget a context and its token",
        "context": "saved servers (nebula login)",
        "whoami": "who this command line acts as, and where",
    },
    "reconciler.cli.projects": {
        "project": "registered projects",
        "reconcile": "one pass now: poll, stage, apply, advance",
    },
    "reconciler.cli.changesets": {
        "changesets": "change sets with their lines",
        "changeset": "one change set",
    },
    "reconciler.cli.approvals": {
        "approvals": "pending and decided approvals",
        "approve": "approve a pending request",
        "reject": "reject a pending request",
    },
    "reconciler.cli.people": {
        "member": "organization members",
        "grant": "where a member may deploy or approve",
    },
    "reconciler.cli.org": {
        "policy": "organization policies",
        "service": "per-service settings",
        "freeze": "weekly deploy-freeze windows",
    },
    "reconciler.cli.tokens": {"token": "API tokens"},
    "reconciler.cli.secrets": {"secret": "server-side secrets"},
    "reconciler.cli.notify": {
        "notify": "notification channels: Slack, PagerDuty, Teams, e-mail, webhooks"
    },
    "reconciler.cli.inbox": {"inbox": "approvals to decide, decisions, failures: yours"},
    "reconciler.cli.deployments": {
        "status": "active releases and in-flight deployments",
        "deployments": "deployments, newest last",
        "deployment": "one deployment",
        "rollback": "roll back to a retained release",
        "promote": "promote the active release to another environment",
        "redeploy": "a new release from the active image",
        "cancel": "cancel a deployment that has not taken traffic",
    },
    "reconciler.cli.live": {
        "diff": "live objects vs the active release's manifests (unified diff)",
        "simulated": "change the simulated cluster behind Nebula's back (tests, demo)",
    },
    "reconciler.cli.suspensions": {
        "suspend": "apply nothing in a project or environment until resumed",
        "resume": "resume a suspended project or environment",
    },
    "reconciler.cli.demo": {"demo": "the embedded default end to end, in under a minute"},
    "reconciler.cli.serving": {
        "serve": "the scheduler (polling, reconciling, expiring approvals) plus the web server"
    },
    "reconciler.cli.history": {"history": "a service's releases, newest first"},
    "reconciler.cli.waiting": {"wait": "wait for a deployment (or a change set) to end"},
    "reconciler.cli.auditing": {"audit": "who changed what: the audit trail"},
    "reconciler.cli.clusters": {"clusters": "the clusters Nebula deploys to, asked now"},
    "reconciler.cli.completion": {"completion": "print a shell completion script"},
}
OWNER = {command: module for module, lines in COMMANDS.items() for command in lines}
HELP = {command: line for lines in COMMANDS.values() for command, line in lines.items()}


def settings_help() -> str:
    """The settings, for ``nebula --help``: each with its default and what it means."""
    lines = [
        "settings: NEBULA_* environment variables, or the same keys (with or without NEBULA_,",
        "in any case) in the file given with --config; the environment wins over the file.",
    ]
    for spec in settings.TABLE:
        default = f" (default {spec.default})" if spec.default else ""
        secret = " (secret)" if spec.secret else ""
        lines.append(f"  {spec.variable}{default}{secret}")
        lines += textwrap.wrap(spec.about, 92, initial_indent=" " * 6, subsequent_indent=" " * 6)
    lines += ["", "client side (a remote command line: nebula login, or these):"]
    for name, about in settings.CLIENT_VARIABLES.items():
        lines.append(f"  {settings.PREFIX}{name.upper()}")
        lines += textwrap.wrap(about, 92, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


class Listed(Parser):
    """A command as ``nebula --help`` lists it: its line only, with no parser behind it. Built
    for real, the 42 parsers cost ``--help`` a third of its time, mostly argparse asking
    ``gettext`` for a translation (and the disk for its file) a few times in each."""

    def __init__(self, **_: object) -> None:  # never parses: nothing to set up
        pass


def root(
    *, everything: bool, commands: type[Parser] = Parser
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[Parser]]:
    """The ``nebula`` parser with its global options, and where commands are added (each a
    ``commands``); with the settings as its epilog when it will list every command."""
    parser = Parser(
        prog="nebula",
        description="Nebula: GitOps deployments with approvals.",
        epilog=settings_help() if everything else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="server settings file (nebula-server.toml); NEBULA_* variables override it",
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        help="act through this Nebula server (default: NEBULA_SERVER, or the context in use)",
    )
    parser.add_argument("--context", metavar="NAME", help="use this saved context (nebula login)")
    parser.add_argument("--version", action="version", version=VERSION)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=commands)
    return parser, subparsers


def help_text() -> str:
    """What ``nebula --help`` prints: the root parser's help with each command's line."""
    parser, subparsers = root(everything=True, commands=Listed)
    for command, line in HELP.items():
        subparsers.add_parser(command, help=line)
    return parser.format_help()


def print_help(to_stderr: bool = False) -> int:
    """``nebula --help`` (exit 0), or the same on stderr for a bare ``nebula`` (exit 2)."""
    (sys.stderr if to_stderr else sys.stdout).write(help_text())
    return output.EXIT_USAGE if to_stderr else output.EXIT_OK
