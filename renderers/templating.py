"""The Jinja2 environment for manifests, separate from any HTML one.

Templates only lay out structure; every value is emitted through ``|q`` (quoted text) or
``|n`` (a number we control). ``finalize`` refuses anything else that reaches ``{{ }}``, so an
unfiltered value is an error when the template is rendered, not a manifest whose structure a
value could change. Undefined names raise (``StrictUndefined``), and the filter set is cut down
to what the templates need so no other filter can produce output that slips past ``finalize``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from renderers import quoting
from renderers.quoting import Scalar


class UnquotedValueError(TypeError):
    """A template tried to output a value without ``|q`` or ``|n``: a bug in the template."""


def _finalize(value: Any) -> Scalar:
    if type(value) is Scalar:
        return value
    raise UnquotedValueError(
        f"template output of type {type(value).__name__} must pass through |q or |n"
    )


# The one built-in filter templates use: it only adds spaces at line starts of template output.
_KEPT_FILTERS = ("indent",)


def _undefined(value: Any) -> None:
    """An undefined name given to a filter raises as StrictUndefined would on output."""
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises UndefinedError naming the missing value


def _quote(value: Any) -> Scalar:
    _undefined(value)
    return quoting.quote(value)


def _number(value: Any) -> Scalar:
    _undefined(value)
    return quoting.number(value)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("renderers", "templates"),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        autoescape=False,  # YAML, not HTML: quoting is |q's job
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
        cache_size=-1,
    )
    env.filters = {name: env.filters[name] for name in _KEPT_FILTERS}
    env.filters["q"] = _quote
    env.filters["n"] = _number
    env.tests = {name: env.tests[name] for name in ("defined", "none")}
    env.globals = {}
    return env


def template(name: str) -> jinja2.Template:
    """A compiled template, loaded once per process."""
    return _template(name)


@cache
def _template(name: str) -> jinja2.Template:
    return environment().get_template(name)
