"""House rules, checked with the tests: lint, types, and the import direction of the layers."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from reconciler import lazy
from reconciler.acts import routes
from reconciler.settings import unknown_variables

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_changes_nothing() -> None:
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_import_linter_contract_is_kept() -> None:
    """Layers point one way, siblings stay apart, the pure core does no I/O, and each edge's
    library is imported by that edge only (pyproject.toml, [tool.importlinter])."""
    linter = shutil.which("lint-imports")
    if linter is None:
        pytest.fail("lint-imports (import-linter) is not installed: pip install -e '.[test]'")
    result = run(linter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


def _layered() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    house = next(c for c in contracts if c["type"] == "layers" and "containers" not in c)
    return {name.strip() for layer in house["layers"] for name in layer.split("|")}


def test_the_layers_contract_covers_every_package() -> None:
    """A new package or top-level module has to be given its floor in the house."""
    top = {"renderers", "notifiers"} | {
        f"reconciler.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "reconciler").iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }
    assert top - _layered() == set()


def test_no_import_circle_between_modules() -> None:
    graph = grimp.build_graph("reconciler", "renderers", "notifiers")
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i in graph.modules}
        for m in graph.modules
    }
    assert _circles(edges) == []


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_no_import_inside_a_function() -> None:
    """An import deferred into a function hides a circle or a wrong-way dependency: move the
    code instead. What is deferred on purpose (start-up time) is named in ``reconciler.lazy``."""
    deferred = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package in ("reconciler", "renderers", "notifiers")
        for path in sorted((ROOT / package).rglob("*.py"))
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert deferred == []


def test_every_part_loaded_by_name_exists() -> None:
    """A static import graph cannot see what ``reconciler.lazy`` loads by name: each part
    named at a module's top, and each act of the API's routes, must load."""
    named = []
    for path in sorted((ROOT / "reconciler").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if "Part(" not in path.read_text(encoding="utf-8") or "migrations" in path.parts:
            continue
        loaded = importlib.import_module(module)
        named += [v for v in vars(loaded).values() if isinstance(v, lazy.Part)]
    named += [lazy.Part.named(route.act) for route in routes.ROUTES]
    assert len(named) > len(routes.ROUTES), "the command line's parts were found too"
    for part in named:
        assert callable(part.get()), str(part)


def test_modules_stay_small() -> None:
    """One concept per module: a module over 400 lines is hiding a second one."""
    big = [
        f"{path.relative_to(ROOT)} ({count} lines)"
        for package in ("reconciler", "renderers", "notifiers", "bench")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > 400
    ]
    assert big == []


def test_ci_exports_no_nebula_variable_that_is_no_setting() -> None:
    """The test harness's own switches are ``TEST_*``: a ``NEBULA_*`` one that is no setting
    makes every command in CI warn about it, and tests that expect a quiet stderr fail there."""
    exported = re.findall(r"^export (NEBULA_[A-Z0-9_]+)=", (ROOT / ".ci/run").read_text(), re.M)
    assert unknown_variables(dict.fromkeys(exported, "")) == []
