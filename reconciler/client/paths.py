"""Where a command's request goes: ``/api/v1/`` and its segments, each a name typed on the
command line, quoted whole.

A name is one segment, whatever it holds: ``x?y=1`` is not a query, and ``..`` or ``a/b``,
which an HTTP client would fold into another route (``member remove ../projects/shop`` once
removed a project), are refused before anything is sent.
"""

from __future__ import annotations

from urllib.parse import quote

from reconciler.errors import ConfigurationError

PREFIX = "/api/v1"


def segment(name: str | int) -> str:
    text = str(name)
    if text in ("", ".", "..") or "/" in text:
        raise ConfigurationError(
            f"{text!r} is not a name",
            hint="a project, environment, service, member or secret name holds no '/' and is "
            "not '.' or '..'",
        )
    return quote(text, safe="")


def api(*segments: str | int) -> str:
    """``api("projects", slug, "diff")`` -> ``/api/v1/projects/<slug>/diff``."""
    return "/".join([PREFIX, *(segment(s) for s in segments)])


def check(path: str) -> None:
    """A path built by hand is sent as written, never folded: no ``.`` or ``..`` segment."""
    if any(part in (".", "..") for part in path.split("?", 1)[0].split("/")):
        raise ConfigurationError(f"{path!r} is not a path of the API: it has a '.' or '..' part")
