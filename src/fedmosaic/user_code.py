"""A user's own code named by import path (``"module:callable"``), and the hash of the source it ran.

An experiment names a factory as ``"module:callable"`` (an installed or
importable module) or ``"file.py:callable"`` (a module file, relative to the
experiment file). :func:`resolve_beside` makes a module that lies beside the
experiment file an absolute file path, so a run finds it wherever it is
started from; :func:`load_callable` imports it and :func:`source_sha256`
records which source ran.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from fedmosaic.errors import ConfigError

FORM = "'module:callable' or 'file.py:callable'"


OWN_PARTS = ("model", "head")
"""The keys of a run's parameters, and of a model card's architecture, that may name a factory: a method's own model part, and a vertical method's own head."""


def split_spec(spec: str, field: str) -> tuple[str, str]:
    """The module (or ``.py`` file) and the attribute path of ``spec``.

    Examples
    --------
    >>> split_spec("mynets:small_cnn", "model.factory")
    ('mynets', 'small_cnn')
    >>> split_spec("small_cnn", "model.factory")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: model.factory: must be 'module:callable' or 'file.py:callable', got 'small_cnn'
    """
    module, colon, attribute = spec.rpartition(":")
    if not colon or not module or not attribute or not all(part.isidentifier() for part in attribute.split(".")):
        raise ConfigError(field, f"must be {FORM}, got {spec!r}")
    return module, attribute


def resolve_beside(spec: str, base: Path) -> str:
    """``spec`` with a module file of ``base`` (``name.py`` or ``name/__init__.py``) made absolute.

    Modules that are not beside the experiment file are left to the import
    system (installed packages).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "mynets.py").write_text("def net(input_shape, num_classes): ...")
    >>> resolve_beside("mynets:net", folder) == f"{(folder / 'mynets.py').resolve()}:net"
    True
    >>> resolve_beside("torchvision.models:resnet18", folder)
    'torchvision.models:resnet18'
    """
    module, colon, attribute = spec.rpartition(":")
    if not colon or not module:
        return spec
    if module.endswith(".py"):
        return f"{(base / module).resolve()}:{attribute}"
    for candidate in (base / f"{module}.py", base / module / "__init__.py"):
        if "." not in module and candidate.is_file():
            return f"{candidate.resolve()}:{attribute}"
    return spec


def load_callable(spec: str, field: str) -> Callable[..., Any]:
    """Import the callable ``spec`` names.

    Raises
    ------
    ConfigError
        Naming ``field``, if the module cannot be imported (with its error),
        lacks the attribute, or the attribute is not callable.
    """
    module_name, attribute = split_spec(spec, field)
    module = _import(module_name, field)
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(field, f"{module_name} has no attribute '{attribute}'")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(field, f"{spec} is a {type(target).__name__}, not a callable")
    return target  # type: ignore[no-any-return]


def check_accepts(
    build: Callable[..., Any],
    named: str,
    field: str,
    inputs: dict[str, Any],
    arguments: dict[str, Any],
    *,
    all_inputs: bool,
) -> None:
    """Refuse a factory that cannot be called with ``inputs`` and ``arguments`` (its ``args``).

    With ``all_inputs``, ``inputs`` must be all it needs; otherwise the method may pass it more
    (a vertical party's index). A callable whose signature Python cannot read (a C function) is
    checked when it builds.

    Raises
    ------
    ConfigError
        Naming ``field``: what it must accept, and why it cannot.

    Examples
    --------
    >>> check_accepts(lambda input_shape, num_classes: None, "net", "model.factory", {"input_shape": (1,), "num_classes": 2}, {"depth": 2}, all_inputs=True)
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: model.factory: net must accept input_shape, num_classes and args ['depth'] (got an unexpected keyword argument 'depth')
    """
    try:
        signature = inspect.signature(build)
    except ValueError:
        return
    bind = signature.bind if all_inputs else signature.bind_partial
    try:
        bind(**inputs, **arguments)
    except TypeError as error:
        extra = f" and args {sorted(arguments)}" if arguments else ""
        raise ConfigError(field, f"{named} must accept {', '.join(inputs)}{extra} ({error})") from None


def source_sha256(spec: str, field: str) -> str:
    """SHA-256 of the source file of the module ``spec`` names (what a run records as the code it ran)."""
    module = _import(split_spec(spec, field)[0], field)
    path = module_file(module)
    if path is None:
        raise ConfigError(field, f"{module.__name__} has no source file to record")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_file(module: ModuleType) -> Path | None:
    """The source file of ``module``, if it has one."""
    try:
        found = inspect.getsourcefile(module)
    except TypeError:  # a built-in module
        return None
    return Path(found) if found else None


def _import(module_name: str, field: str) -> ModuleType:
    try:
        if module_name.endswith(".py"):
            return _import_file(Path(module_name))
        return importlib.import_module(module_name)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's module: any error while importing it is theirs to see, on one line
        detail = str(error).splitlines()[0] if str(error) else ""
        raise ConfigError(field, f"cannot import {module_name}: {type(error).__name__}: {detail}") from None


def _import_file(path: Path) -> ModuleType:
    """Import the module file ``path`` once (under a name derived from its path, so two files never clash)."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    name = "fedmosaic_user_code." + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12] + "_" + path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"not a Python module: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
