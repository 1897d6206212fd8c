"""``nebula init``: a commented starter nebula.toml, from one of the templates shipped in the
package (``reconciler/samples/templates/NAME.toml``).

The templates are files rather than strings in code so that each is read as a person reads
it: its comments teach the format, and its first line (``# what it is.``) is what
``nebula init --list`` shows. Each validates and deploys to healthy on the embedded defaults
(tests/cli/test_init.py), so a newcomer's first push works.
"""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from reconciler.cli import output, tables

FILE_NAME = "nebula.toml"
DEFAULT = "web"
_FOLDER = ("samples", "templates")


@dataclass(frozen=True)
class Template:
    name: str
    text: str

    @property
    def about(self) -> str:
        """Its first line, without the ``#`` and the full stop."""
        return self.text.splitlines()[0].removeprefix("#").strip().rstrip(".")


def templates() -> list[Template]:
    """Every template shipped, by name (``web`` first: the default)."""
    folder = resources.files("reconciler").joinpath(*_FOLDER)
    found = [
        Template(item.name.removesuffix(".toml"), item.read_text(encoding="utf-8"))
        for item in folder.iterdir()
        if item.name.endswith(".toml")
    ]
    return sorted(found, key=lambda t: (t.name != DEFAULT, t.name))


COLUMNS = (
    tables.Column("template", "name"),
    tables.Column("description", "description", text=True),
)


def init(args: argparse.Namespace) -> int:
    known = templates()
    if args.list:
        return _list(args, known)
    wanted = args.template or DEFAULT
    chosen = next((t for t in known if t.name == wanted), None)
    if chosen is None:
        names = [t.name for t in known]
        close = difflib.get_close_matches(wanted, names, n=1)
        output.error(
            f"no template {wanted!r}" + (f"; did you mean {close[0]!r}?" if close else ""),
            f"templates: {', '.join(names)} (nebula init --list)",
        )
        return output.EXIT_USAGE
    return _write(Path(args.dir), chosen)


def _list(args: argparse.Namespace, known: list[Template]) -> int:
    rows = [{"name": t.name, "description": t.about} for t in known]
    if args.json:
        output.print_json({"templates": rows})
    else:
        tables.show(rows, COLUMNS)
    return output.EXIT_OK


def _write(folder: Path, template: Template) -> int:
    """``folder``/nebula.toml, made with its folder; never over a file already there."""
    target = folder / FILE_NAME
    shown = str(target)
    if target.exists() or target.is_symlink():
        output.error(
            f"{shown} already exists; nebula init does not overwrite it",
            f"check it with: nebula validate {shown}; or give another folder: "
            f"nebula init DIR --template {template.name}",
        )
        return output.EXIT_REFUSED
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        output.error(f"cannot make the folder {folder}: {exc.strerror or exc.__class__.__name__}")
        return output.EXIT_REFUSED
    try:
        with target.open("x", encoding="utf-8") as file:  # "x": never over a file
            file.write(template.text)
    except FileExistsError:  # made since the check above
        output.error(f"{shown} already exists; nebula init does not overwrite it")
        return output.EXIT_REFUSED
    except OSError as exc:
        output.error(f"cannot write {shown}: {exc.strerror or exc.__class__.__name__}")
        return output.EXIT_REFUSED
    output.echo(f"wrote {shown} (template {template.name}: {template.about})")
    output.echo("next: replace the images with yours, then: nebula validate " + shown)
    output.echo("then commit it and register the repository: nebula project add SLUG --repo URL")
    return output.EXIT_OK
