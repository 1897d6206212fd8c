"""``nebula import compose``: reads the Compose file (and the env_files it names), prints what
was not carried over, and writes the nebula.toml only when it validates.

The file is written whole or not at all (a temporary file renamed over the target), and an
existing file is never overwritten: the import is for a project's first nebula.toml.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from reconciler.cli import common, files, output
from reconciler.importing import composing
from reconciler.importing.notes import Level
from reconciler.model.validation import decode


def import_compose(args: argparse.Namespace) -> int:
    source = Path(args.file)
    if args.out != "-" and Path(args.out).exists():
        return files.fail(
            f"{args.out} exists: nothing written",
            "give another --out PATH (or - for standard output), or move it away first",
        )
    if args.out != "-" and not Path(args.out).resolve().parent.is_dir():
        return files.fail(f"{args.out}: no such folder", "create the folder first")
    text = files.read_source(args.file, args)
    limit = common.load_settings(args).max_config_size
    folder = source.resolve().parent
    imported = composing.convert(
        text,
        args.file,
        project=files.slugify(folder.name),
        images=dict(args.image),
        read_file=lambda path: _read(folder / path, limit),
        out=args.out if args.out != "-" else "nebula.toml",
    )
    for note in imported.notes:
        sys.stderr.write(f"{note}\n")
    if imported.text is None:
        return _nothing_written(args.file, imported, args.out if args.out != "-" else "nebula.toml")
    if args.out == "-":
        sys.stdout.write(imported.text)
        return output.EXIT_OK
    _write(Path(args.out), imported.text)
    secrets = len(imported.secrets)
    to_set = f"; {secrets} secret{'s' if secrets != 1 else ''} to set (above)" if secrets else ""
    output.echo(
        f"wrote {args.out}: {_count(imported.services, 'service')}, "
        f"{_count(imported.databases, 'database')}{to_set}"
    )
    return output.EXIT_OK


def _nothing_written(path: str, imported: composing.Imported, out: str) -> int:
    if imported.problems:
        for problem in imported.problems:
            hint = f" ({problem.hint})" if problem.hint else ""
            sys.stderr.write(f"{out} (not written): {problem.message}{hint}\n")
        return files.fail(
            f"nothing written: what {path} says would not make a valid nebula.toml",
            f"change {path} as the lines above say, and import again",
        )
    refused = sum(1 for note in imported.notes if note.level is Level.REFUSED)
    return files.fail(
        f"nothing written: {_count(refused, 'problem')} in {path}",
        "fix the lines above and import again",
    )


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'s' if number != 1 else ''}"


def _read(path: Path, limit: int) -> str | None:
    """An env_file's text; None when it is missing, unreadable, too large or not UTF-8."""
    try:
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    return decode(data) if len(data) <= limit else None


def _write(path: Path, text: str) -> None:
    """Whole or not at all: a temporary file beside the target, renamed over it."""
    folder = path.resolve().parent
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)  # a file for the repository, not a private one
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
