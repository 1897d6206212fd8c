"""``nebula project ...`` and ``nebula reconcile``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.cli import common, output, tables
from reconciler.client import paths
from reconciler.durations import format_duration, parse_duration
from reconciler.errors import ConfigurationError, RefusedError, shown
from reconciler.gitsource import urls

if TYPE_CHECKING:
    from reconciler.client.http import Api

SETTABLE = (
    "concurrency, interval, branch, path, repo, slack_channel, webhook_secret, webhook_limit, "
    "cluster.ENV"
)


def register(subparsers: common.Subparsers) -> None:
    project = subparsers.add_parser("project", help="registered projects").add_subparsers(
        dest="project_command", metavar="COMMAND", required=True
    )
    p = common.command(project, "add", project_add, "register a project to watch")
    p.add_argument("slug")
    p.add_argument("--repo", required=True, help="git URL or local path")
    p.add_argument("--branch", default="main")
    p.add_argument("--path", default="nebula.toml")
    p.add_argument("--interval", default=None, help="poll interval, e.g. 60 or 5m (default 60s)")
    p.add_argument(
        "--no-check",
        action="store_true",
        help="do not check that the repository answers and has the branch",
    )
    common.add_json(p)
    p = common.command(project, "list", project_list, "list projects")
    common.add_json(p)
    p = common.command(
        project, "remove", project_remove, "tear down every environment, then forget the project"
    )
    p.add_argument("slug")
    p.add_argument(
        "--yes", "-y", action="store_true", help="do not ask for the slug to be typed (scripts)"
    )
    common.add_json(p)
    p = common.command(project, "set", project_set, "change a project setting")
    p.add_argument("slug")
    p.add_argument("key", help=SETTABLE)
    p.add_argument(
        "value",
        nargs="?",
        help="for webhook_secret leave it out: it is read from stdin, or asked for",
    )

    p = common.command(
        subparsers, "reconcile", reconcile, "one pass now: poll, stage, apply, advance"
    )
    p.add_argument("--project", help="only this project")
    p.add_argument(
        "--until-idle", action="store_true", help="repeat until nothing can move by itself"
    )
    common.add_timeout(p, "5m", "with --until-idle: give up after this long (default 5m)")
    common.add_json(p)


def _repo(api: Api, repo: str) -> str:
    """Locally, ``--repo ./shop`` is the directory here; a server is never sent a relative
    path (its working directory is nobody's business: it refuses one)."""
    if api.remote or not urls.is_relative_path(repo):
        return repo
    return str(Path(repo.strip()).resolve())


def project_add(args: argparse.Namespace) -> int:
    if args.interval:
        parse_duration(args.interval, setting="--interval")  # said here, before anything is sent
    api = common.api(args)
    body = {
        "slug": args.slug,
        "repo": _repo(api, args.repo),
        "branch": args.branch,
        "path": args.path,
        "interval": args.interval,
        **({"no_check": True} if args.no_check else {}),  # (a server before 1.2 knows no such key)
    }
    data = api.post("/api/v1/projects", body)["project"]
    if args.json:
        output.print_json({"project": data})
    else:
        output.echo(f"project {args.slug} watches {data['repo']} ({args.branch}, {args.path})")
    return 0


PROJECT_COLUMNS = (
    tables.Column("project", "slug"),
    tables.Column("repo", "repo"),
    tables.Column("branch", "branch"),
    tables.Column("commit", lambda r: tables.short_commit(r["commit"])),
    tables.Column("blocker", "blocker"),
    tables.Column("message", "message", text=True),
    tables.Column("path", "path", only_wide=True),
    tables.Column("interval", "interval", only_wide=True),
    tables.Column("last polled", "last_polled_at", only_wide=True),
)


def project_list(args: argparse.Namespace) -> int:
    rows = common.api(args).get("/api/v1/projects")["projects"]
    if args.json:
        output.print_json({"projects": rows})
    else:
        tables.show(rows, PROJECT_COLUMNS)
        unsigned = [str(r["slug"]) for r in rows if not r["webhook_signed"]]
        if unsigned:
            output.warning(
                f"{', '.join(unsigned)} accept{'s' if len(unsigned) == 1 else ''} push "
                "notifications from anyone: no webhook secret",
                hint=f"nebula project set {unsigned[0]} webhook_secret (reads it from stdin)",
            )
    return 0


def project_set(args: argparse.Namespace) -> int:
    value = args.value
    if args.key == "webhook_secret":
        value = _webhook_secret(args.slug, value)
    elif value is None:
        raise ConfigurationError(
            f"no value for {args.key}", hint=f"nebula project set {args.slug} {args.key} VALUE"
        )
    api = common.api(args)
    if args.key == "repo":
        value = _repo(api, value)
    body = {"key": args.key, "value": value}
    done = api.post(paths.api("projects", args.slug, "settings"), body)
    output.echo(f"{args.slug}: {args.key} = {done['value']}")
    return 0


def project_remove(args: argparse.Namespace) -> int:
    if not args.yes and not sys.stdin.isatty():  # nobody to ask: a script says --yes
        output.error(
            f"not removing {args.slug} without confirmation: it tears down every environment "
            "of the project, and there is no terminal to confirm on",
            hint=f"in a script: nebula project remove {args.slug} --yes",
        )
        return output.EXIT_USAGE
    api = common.api(args)
    if not args.yes:
        api.get(paths.api("projects", args.slug))  # an unknown project is said before asking
        sys.stderr.write(
            f"This tears down every environment of {args.slug} and forgets the project.\n"
            f"Type {args.slug} to confirm: "
        )
        sys.stderr.flush()
        typed = sys.stdin.readline().strip()
        if typed != args.slug:
            raise RefusedError(
                f"project {args.slug} not removed: "
                + (f"{shown(typed)} is not {args.slug}" if typed else "nothing was typed")
            )
    removal = api.delete(paths.api("projects", args.slug))
    if args.json:
        output.print_json(removal)
    elif removal["forgotten"]:
        output.echo(f"project {args.slug} torn down and removed")
    else:
        output.echo(
            f"project {args.slug} is being removed: {', '.join(removal['pending_teardown'])} "
            "wait in pending-teardown until their cluster can be reached (each reconcile tries "
            "again)"
        )
    return 0


def _webhook_secret(slug: str, given: str | None) -> str:
    """The secret from the command line (with a warning), a terminal prompt, or stdin."""
    if given is not None:
        if given:
            output.warning(
                "a secret on the command line may be kept in your shell history",
                hint=f"next time leave it out: nebula project set {slug} webhook_secret",
            )
        return given
    value = common.read_secret(f"Webhook secret for {slug}: ")
    if not value:
        raise ConfigurationError(
            "no webhook secret given",
            hint=f'printf %s "$SECRET" | nebula project set {slug} webhook_secret '
            f'(to remove it: nebula project set {slug} webhook_secret "")',
        )
    return value


def reconcile(args: argparse.Namespace) -> int:
    """Passes until nothing can move by itself (``--until-idle``), each one a request: the
    command line counts and waits, the API's act runs the pass (here or on the server)."""
    api = common.api(args)
    deadline = time.monotonic() + args.timeout.total_seconds()
    passes = 0
    total_moved = 0
    first: dict[str, Any] | None = None
    timed_out = False
    while True:
        report = api.post("/api/v1/reconcile", {"project": args.project, "poll": passes == 0})
        first = first or report
        passes += 1
        total_moved += report["steps"]
        if not args.until_idle or not report["busy"]:
            break
        if time.monotonic() > deadline:
            timed_out = True
            break
        if report["steps"] == 0:
            time.sleep(0.05)
    assert first is not None
    summary = {
        "passes": passes,
        "polled": first["polled"],
        "staged_changesets": first["staged_changesets"],
        "blocked": first["blocked"],
        "expired_approvals": first["expired_approvals"],
        "steps": total_moved,
        "idle": not timed_out,
    }
    if args.json:
        output.print_json({"reconcile": summary})
    if timed_out:
        output.error(
            f"still busy after {format_duration(args.timeout)}; stopping",
            hint="run nebula reconcile --until-idle again to go on",
        )
        return output.EXIT_REFUSED
    if not args.json:
        staged = len(first["staged_changesets"])
        output.echo(
            f"reconciled: {passes} pass{'es' if passes != 1 else ''}, {staged} change set{'s' if staged != 1 else ''} staged, {total_moved} deployment step{'s' if total_moved != 1 else ''}"
        )
        for slug, blocker in first["blocked"].items():
            output.echo(f"  {slug}: blocked ({blocker})")
    return 0
