"""A request's path and query parameters checked against its route as the HTTP app's
validation (FastAPI, pydantic) checks them, in the same words: so the command line's local
backend, which loads no web framework, refuses what a server refuses and says it the same way
(``path.name: String should match pattern '...'``), and a test of one door tests the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reconciler.acts.declaring import Param, Route
from reconciler.errors import ConfigurationError

INVALID = "invalid-request"  # the code of a 422 for a request that does not validate
_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def _problem(param: Param, value: str | None) -> str | None:
    if value is None:
        return "Field required" if param.required or param.in_path else None
    if param.integer is not None:
        least, most, _ = param.integer
        if not _INTEGER.fullmatch(value):
            return "Input should be a valid integer, unable to parse string as an integer"
        if int(value) < least:
            return f"Input should be greater than or equal to {least}"
        if int(value) > most:
            return f"Input should be less than or equal to {most}"
        return None
    if len(value) > param.max_length:
        return f"String should have at most {param.max_length} characters"
    # pydantic's (Rust) ``$`` is the end of the text; Python's also matches before a final
    # newline, which no pattern here takes.
    if param.pattern is not None and (
        re.search(param.pattern, value) is None or value[-1:] == "\n"
    ):
        return f"String should match pattern '{param.pattern}'"
    return None


def check(route: Route, path: Mapping[str, str], query: Mapping[str, str | None]) -> None:
    """``ConfigurationError`` (422) naming each parameter that does not validate, then the
    first unknown query parameter (a typo such as ``?projct=shop`` is said, not ignored)."""
    problems = []
    for param in sorted(route.params, key=lambda p: not p.in_path):
        where = "path" if param.in_path else "query"
        value = (path if param.in_path else query).get(param.name)
        problem = _problem(param, value)
        if problem is not None:
            problems.append(f"{where}.{param.name}: {problem}")
    if problems:
        raise ConfigurationError("; ".join(problems), code=INVALID)
    check_known(route, query)


def check_known(route: Route, query: Mapping[str, object]) -> None:
    known = {p.name for p in route.params if not p.in_path}
    unknown = sorted(set(query) - known)
    if unknown:
        raise ConfigurationError(
            f"query.{unknown[0][:40]}: not a parameter of {route.method} {route.path}",
            hint=f"its parameters: {', '.join(sorted(known)) or 'none'}",
        )
