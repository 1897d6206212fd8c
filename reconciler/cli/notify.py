"""``nebula notify add|list|remove|test``: where notifications go besides the default Slack
channel, for which scope (the organization, a project, an environment) and which events.

A PagerDuty routing key is read from stdin (TARGET ``-``), never from the command line, where
shell history and ``ps`` would keep it; a webhook's signing secret is printed once. Listings
show targets redacted.
"""

from __future__ import annotations

import argparse
import sys

from reconciler.cli import common, output, tables
from reconciler.client import paths
from reconciler.errors import ConfigurationError

KINDS = ("slack", "pagerduty", "teams", "email", "webhook")
COLUMNS = (
    tables.Column("id", "id"),
    tables.Column("kind", "kind"),
    tables.Column("scope", "scope"),
    tables.Column("events", lambda r: ",".join(r["events"])),
    tables.Column("target", "target"),
    tables.Column("last delivery", lambda r: r["last_delivery"] or "never"),
    tables.Column("last error", "last_error", text=True),
    tables.Column("error at", "last_error_at", only_wide=True),
)
STDIN = "-"


def register(subparsers: common.Subparsers) -> None:
    notify = subparsers.add_parser(
        "notify", help="notification channels: Slack, PagerDuty, Teams, e-mail, webhooks"
    ).add_subparsers(dest="notify_command", metavar="COMMAND", required=True)
    p = common.command(notify, "add", notify_add, "add a notification channel")
    p.add_argument("kind", choices=KINDS)
    p.add_argument(
        "target",
        help="a Slack channel id, - (a PagerDuty routing key on stdin), a Teams workflow URL, "
        "e-mail addresses (comma-separated) or a webhook URL",
    )
    p.add_argument("--project", help="only this project's notices (default: every project)")
    p.add_argument("--env", help="only this environment's (with --project)")
    p.add_argument(
        "--on",
        metavar="EVENTS",
        help="approval,failure,drift,healthy,blocked (default: approval,failure,drift)",
    )
    common.add_json(p)
    p = common.command(notify, "list", notify_list, "channels: scope, events, last delivery")
    common.add_json(p)
    p = common.command(notify, "remove", notify_remove, "remove a channel (by its id)")
    p.add_argument("id")
    common.add_json(p)
    p = common.command(notify, "test", notify_test, "send a test notification to a channel")
    p.add_argument("id", help="a channel id, or default (the Slack channel of the settings)")
    common.add_json(p)


def _target(args: argparse.Namespace) -> str:
    if args.kind != "pagerduty":
        return str(args.target)
    if args.target != STDIN:
        raise ConfigurationError(
            "pagerduty: the routing key is read from stdin, not the command line",
            hint="nebula notify add pagerduty - < routing-key.txt",
        )
    key = common.read_secret("Routing key: ").strip()
    if not key:
        raise ConfigurationError(
            "pagerduty: no routing key given on stdin",
            hint="nebula notify add pagerduty - < routing-key.txt",
        )
    return key


def notify_add(args: argparse.Namespace) -> int:
    body = {
        "kind": args.kind,
        "target": _target(args),
        "project": args.project,
        "environment": args.env,
        "on": args.on,
    }
    added = common.api(args).post(paths.api("notify", "channels"), body)
    if args.json:
        output.print_json(added)
        return 0
    channel = added["channel"]
    output.echo(
        f"channel {channel['id']} added: {channel['kind']} {channel['target']} for "
        f"{channel['scope']} on {','.join(channel['events'])}"
    )
    if added["signing_secret"]:
        output.echo(added["signing_secret"])
        sys.stderr.write(
            f"The signing secret of channel {channel['id']} is shown once; store it now "
            "(receivers check webhook-signature with it).\n"
        )
    return 0


def notify_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get(paths.api("notify", "channels"))["channels"]
    if args.json:
        output.print_json({"channels": rows})
    else:
        tables.show(rows, COLUMNS)
    return 0


def _channel_id(text: str) -> str:
    return "default" if text == "default" else str(common.parse_id(text, "notification channel"))


def notify_remove(args: argparse.Namespace) -> int:
    if args.id == "default":
        raise ConfigurationError(
            "the default Slack channel comes from the settings, not from nebula notify add",
            hint="unset NEBULA_SLACK_BOT_TOKEN (or NEBULA_SLACK_CHANNEL) on the server to stop it",
        )
    removed = common.api(args).delete(paths.api("notify", "channels", _channel_id(args.id)))
    if args.json:
        output.print_json(removed)
    else:
        channel = removed["channel"]
        output.echo(f"channel {channel['id']} ({channel['kind']} {channel['target']}) removed")
    return 0


def notify_test(args: argparse.Namespace) -> int:
    path = paths.api("notify", "channels", _channel_id(args.id), "test")
    tested = common.api(args).post(path, None)
    if args.json:
        output.print_json(tested)
        return 0 if tested["delivered"] else 1
    if tested["delivered"]:
        output.echo(f"test notification delivered to channel {tested['channel']}")
        return 0
    output.error(
        f"the test notification to channel {tested['channel']} failed: {tested['error']}",
        "nebula notify list shows each channel's last error",
    )
    return 1
