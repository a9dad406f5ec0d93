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
- ``preparation/`` (protocols on own tables before training) imports nothing
  of ``data/``, ``methods/``, ``models/`` or ``experiments/``;
- no module reaches itself through its imports (no circle);
- no module is longer than :data:`MAX_LINES` lines.

And the methods' layout (docs/add-a-method.md):

- ``methods/`` holds the modules every family shares (:data:`SHARED_MODULES`)
  and the family folders (:data:`FAMILIES`), nothing else;
- every method is a package in its family's folder (the concepts family is
  one method, F-CMs, and its folder is that package) holding the role files
  :data:`ROLE_FILES`, or the documented equivalent of a missing one
  (:data:`ROLE_EQUIVALENTS`), and every built-in registered method is built from one
  of these packages' ``build.py``;
- a family imports nothing of another, and the shared modules import no
  family (the built-ins' list, which names them all, aside).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import fedmosaic
from fedmosaic.deferred import Deferred
from fedmosaic.methods.registry import METHODS as REGISTERED

SRC = Path(fedmosaic.__file__).resolve().parent

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "fedmosaic.federation": ("fedmosaic.data", "fedmosaic.methods", "fedmosaic.experiments"),
    "fedmosaic.data": ("fedmosaic.federation", "fedmosaic.methods"),
    "fedmosaic.methods": ("fedmosaic.experiments", "fedmosaic.cli"),
    "fedmosaic.tracking": ("fedmosaic.federation", "fedmosaic.data", "fedmosaic.methods", "fedmosaic.experiments"),
    "fedmosaic.preparation": ("fedmosaic.data", "fedmosaic.methods", "fedmosaic.models", "fedmosaic.experiments"),
}
"""Layer -> the packages and modules it must not import."""

METHODS = SRC / "methods"
FAMILIES = ("horizontal", "concepts", "vertical")
"""The folders of ``methods/`` that group methods by the task they are built from."""
SINGLE_METHOD_FAMILIES = ("concepts",)
"""Families of one method, whose folder is that method's package."""
SHARED_MODULES = (
    "__init__",
    "architectures",
    "arrays",
    "base",
    "builtin",
    "declared_state",
    "kept_optimizer",
    "registry",
    "train_params",
    "training",
)
"""The modules at ``methods/``'s top level: what every family may use, the registries, and the built-ins' list."""
ROLE_FILES = ("params.py", "client.py", "server.py", "build.py")
"""What every method package holds: its parameters, its two halves and its builder."""
ROLE_EQUIVALENTS = {
    ("horizontal/decoder_matched", "server.py"): "no server of its own: build.py builds FedAvg's (horizontal/fedavg)",
}
"""(method package, role file) -> what stands in for a role file the method lacks, and where."""

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


def method_packages() -> list[Path]:
    """Every method package under ``methods/``."""
    return sorted(
        METHODS / family if family in SINGLE_METHOD_FAMILIES else package
        for family in FAMILIES
        for package in ([METHODS / family] if family in SINGLE_METHOD_FAMILIES else (METHODS / family).iterdir())
        if (package / "__init__.py").is_file()
    )


def _family(module: str) -> str | None:
    return next((f for f in FAMILIES if _inside(module, f"fedmosaic.methods.{f}")), None)


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


# --------------------------------------------------------------------------- the methods' layout


def test_methods_holds_the_shared_modules_and_the_family_folders_only() -> None:
    # Execute
    modules = sorted(path.stem for path in METHODS.glob("*.py"))
    folders = sorted(path.name for path in METHODS.iterdir() if path.is_dir() and path.name != "__pycache__")

    # Assert
    assert modules == sorted(SHARED_MODULES), "a method is a package in its family's folder, not a module of methods/"
    assert folders == sorted(FAMILIES)


def test_every_method_package_holds_the_role_files_or_their_documented_equivalents() -> None:
    # Prepare
    packages = method_packages()

    # Execute
    missing = [
        f"{package.relative_to(METHODS)}/{role}"
        for package in packages
        for role in ROLE_FILES
        if not (package / role).is_file() and (str(package.relative_to(METHODS)), role) not in ROLE_EQUIVALENTS
    ]
    stale = [f"{package}/{role}" for package, role in ROLE_EQUIVALENTS if (METHODS / package / role).is_file()]

    # Assert
    assert len(packages) >= 9
    assert not missing, f"method packages without a role file (or an entry in ROLE_EQUIVALENTS): {missing}"
    assert not stale, f"ROLE_EQUIVALENTS names role files that exist: {stale}"


def test_every_registered_method_is_built_by_a_method_package() -> None:
    # Prepare
    builds = {".".join(("fedmosaic", *package.relative_to(SRC).parts, "build")) for package in method_packages()}

    # Execute
    elsewhere = {
        name: _defined_in(method.builder)
        for name, method in REGISTERED.items()
        if REGISTERED.package(name) == "fedmosaic" and _defined_in(method.builder) not in builds
    }

    # Assert
    assert not elsewhere, f"methods not built by a method package's build.py: {elsewhere}"


def _defined_in(builder: Callable[..., object]) -> str:
    """The module of a builder, or of the function a :class:`~fedmosaic.deferred.Deferred` names."""
    return builder.module if isinstance(builder, Deferred) else builder.__module__


def test_a_family_imports_nothing_of_another_and_the_shared_modules_no_family() -> None:
    # Execute
    graph = import_graph(SRC)
    violations = [
        f"{module} -> {imported}"
        for module, imports in sorted(graph.items())
        if _inside(module, "fedmosaic.methods") and module != "fedmosaic.methods.builtin"
        for imported in sorted(imports)
        if _family(imported) is not None and _family(imported) != _family(module)
    ]

    # Assert
    assert not violations, "imports across method families: " + "; ".join(violations)
