"""The layers of fedmosaic, as its imports must keep them (docs/architecture.md, "Layers").

The graph is read from the source with :mod:`ast`, so every import counts:
at module level, under ``if TYPE_CHECKING:`` and inside functions (which is
where circles hide). ``from package import name`` depends on the submodule
``package.name`` when there is one, else on the package itself.

The rules:

- ``federation/`` (the runtime) imports nothing of ``data/``, ``methods/`` or
  ``experiments/``;
- ``data/`` imports nothing of ``federation/`` or ``methods/``;
- ``methods/`` imports nothing of ``experiments/`` or the command line
  (``fedmosaic.cli``);
- ``tracking/`` reads finished results only: nothing of ``federation/``,
  ``data/``, ``methods/`` or ``experiments/``;
- no module reaches itself through its imports (no circle);
- no module is longer than :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import fedmosaic

SRC = Path(fedmosaic.__file__).resolve().parent

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "fedmosaic.federation": ("fedmosaic.data", "fedmosaic.methods", "fedmosaic.experiments"),
    "fedmosaic.data": ("fedmosaic.federation", "fedmosaic.methods"),
    "fedmosaic.methods": ("fedmosaic.experiments", "fedmosaic.cli"),
    "fedmosaic.tracking": ("fedmosaic.federation", "fedmosaic.data", "fedmosaic.methods", "fedmosaic.experiments"),
}
"""Layer -> the packages and modules it must not import."""

MAX_LINES = 600
"""The longest a module may be; a longer one does more than one job."""


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package by its ``__init__.py``)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        yield from (target for target in targets if target in known and target != name)


@functools.cache
def import_graph(root: Path) -> dict[str, frozenset[str]]:
    """Module -> the package's modules it imports."""
    modules = module_files(root)
    known = set(modules)
    return {name: frozenset(imported_modules(name, path, known)) for name, path in modules.items()}


def circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """One circle ``[a, b, ..., a]`` through each group of modules that reach one another."""
    found, seen = [], set()
    for start in sorted(graph):
        if start in seen:
            continue
        path = _path(graph, start, start)
        if path is not None:
            found.append(path)
            seen.update(path)
    return found


def _path(graph: dict[str, frozenset[str]], source: str, target: str) -> list[str] | None:
    """A shortest import path from ``source`` to ``target`` (at least one step), or None."""
    parents: dict[str, str] = {}
    frontier = [source]
    while frontier:
        following = []
        for module in frontier:
            for imported in sorted(graph.get(module, ())):
                if imported == target:
                    path = [target, module]
                    while path[-1] != source:
                        path.append(parents[path[-1]])
                    return path[::-1]
                if imported not in parents and imported != source:
                    parents[imported] = module
                    following.append(imported)
        frontier = following
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


# --------------------------------------------------------------------------- the scanner


def test_the_graph_counts_type_checking_function_local_and_relative_imports(tmp_path: Path) -> None:
    # Prepare
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
            "pkg/b.py": "def f():\n    from . import c\n",
            "pkg/c.py": "from .sub import d\nimport pkg.sub\n",
            "pkg/sub/__init__.py": "from ..a import x\n",
            "pkg/sub/d.py": "import os\n",
        },
    )

    # Execute
    graph = import_graph(root)

    # Assert
    assert graph == {
        "pkg": frozenset(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.c"},
        "pkg.c": {"pkg.sub.d", "pkg.sub"},
        "pkg.sub": {"pkg.a"},
        "pkg.sub.d": frozenset(),
    }


def test_a_circle_is_reported_with_its_modules() -> None:
    # Prepare
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}

    # Execute
    found = circles(graph)

    # Assert
    assert found == [["a", "b", "c", "a"]]
    assert circles({"a": frozenset({"b"}), "b": frozenset()}) == []


# --------------------------------------------------------------------------- fedmosaic's layers


@pytest.mark.parametrize(("layer", "forbidden"), sorted(FORBIDDEN.items()))
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    # Execute
    graph = import_graph(SRC)
    violations = [
        f"{module} -> {imported}"
        for module, imports in sorted(graph.items())
        if _inside(module, layer)
        for imported in sorted(imports)
        if any(_inside(imported, package) for package in forbidden)
    ]

    # Assert
    assert any(_inside(module, layer) for module in graph), f"no module in {layer}"
    assert not violations, f"{layer} must not import {', '.join(forbidden)}: " + "; ".join(violations)


def test_no_module_reaches_itself_through_its_imports() -> None:
    # Execute
    found = circles(import_graph(SRC))

    # Assert
    assert not found, "import circles: " + "; ".join(" -> ".join(circle) for circle in found)


def test_no_module_is_longer_than_600_lines() -> None:
    # Execute
    lengths = {name: len(path.read_text().splitlines()) for name, path in module_files(SRC).items()}
    long = {name: lines for name, lines in lengths.items() if lines > MAX_LINES}

    # Assert
    assert len(lengths) > 100
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"
