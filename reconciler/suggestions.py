"""What to say when a name is not known: the closest known one ("did you mean"), and the names
there are.

One shape for every unknown name a person types (a project, an environment, a service, a
release, a command, an option), so a typo is answered the same way whichever door it came
through: the hint travels in the error (``NebulaError.hint``), and the remote command line
prints the server's.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from reconciler.errors import shown

LISTED = 12  # names listed at most; a longer list ends with how many more there are


def closest(name: str, known: Sequence[str]) -> str | None:
    """The known name ``name`` most likely means: the only one it begins (``prod`` for
    ``production``), else the one it misspells, if one is close enough."""
    started = [k for k in known if name and k.startswith(name)]
    if len(started) == 1:
        return started[0]
    found = difflib.get_close_matches(name, list(known), n=1)
    return found[0] if found else None


def listed(known: Sequence[str]) -> str:
    """``api, web, worker``; past ``LISTED`` names, ``... (and 8 more)``."""
    names = ", ".join(known[:LISTED])
    more = len(known) - LISTED
    return f"{names} (and {more} more)" if more > 0 else names


def hint(
    name: str, known: Sequence[str], what: str, *, none: str | None = None, near: bool = True
) -> str:
    """``did you mean 'api'? services: api, worker`` for an unknown ``name`` among ``known``
    (``what``: what they are, plural); ``none`` when there are none (default: ``no WHAT yet``).
    ``near=False`` for numbered names (``r-9`` is no typo of ``r-1``): only what there is."""
    there = f"{what}: {listed(known)}" if known else (none or f"no {what} yet")
    meant = closest(name, known) if near else None
    return f"did you mean {shown(meant)}? {there}" if meant is not None else there
