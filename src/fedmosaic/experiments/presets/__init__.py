"""Experiments shipped with the package, and resolution of ``PRESET|FILE.toml``."""

from __future__ import annotations

import difflib
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from fedmosaic.data.tables.schema import resolve_paths
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.overrides import read_toml
from fedmosaic.user_code import OWN_PARTS, resolve_beside

_PACKAGE = __name__


def resolve_model_code(source: dict[str, Any], base: Path) -> dict[str, Any]:
    """The raw configuration with each factory module that lies in ``base`` made an absolute file path.

    Factories are ``model.factory`` and a run's ``params.model.factory`` and ``params.head.factory``.

    Examples
    --------
    >>> resolve_model_code({"model": {"kind": "mlp"}}, Path("."))
    {'model': {'kind': 'mlp'}}
    """

    def resolved(model: Any) -> Any:
        if not isinstance(model, dict) or not isinstance(model.get("factory"), str):
            return model
        return {**model, "factory": resolve_beside(model["factory"], base)}

    source = {**source, "model": resolved(source["model"])} if "model" in source else source
    runs = source.get("runs")
    if not isinstance(runs, list):
        return source

    def resolved_run(run: Any) -> Any:
        if not isinstance(run, dict) or not isinstance(run.get("params"), dict):
            return run
        params = run["params"]
        return {**run, "params": {**params, **{key: resolved(params[key]) for key in OWN_PARTS if key in params}}}

    return {**source, "runs": [resolved_run(run) for run in runs]}


def experiment_folder(spec: str) -> Path:
    """Where a factory module named by ``spec``'s experiment or its overrides is looked for: the file's folder, else here.

    Examples
    --------
    >>> experiment_folder("studies/mine.toml"), experiment_folder("digits-fedavg") == Path.cwd()
    (PosixPath('studies'), True)
    """
    return Path.cwd() if spec in preset_names() else Path(spec).parent


def preset_names() -> list[str]:
    """Names of the shipped presets, sorted."""
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in resources.files(_PACKAGE).iterdir()
        if entry.name.endswith(".toml")
    )


def preset_source(name: str) -> dict[str, Any]:
    """The raw configuration of preset ``name``."""
    return tomllib.loads(resources.files(_PACKAGE).joinpath(f"{name}.toml").read_text())


def describe_presets() -> list[tuple[str, str]]:
    """``(name, description)`` of every preset."""
    return [(name, str(preset_source(name).get("description", ""))) for name in preset_names()]


def resolve_experiment(spec: str) -> dict[str, Any]:
    """The raw configuration named by ``spec``: a preset name or a TOML file path.

    Raises
    ------
    ConfigError
        If ``spec`` is neither, with a did-you-mean among the presets.
    """
    if spec in preset_names():
        return preset_source(spec)
    path = Path(spec)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ConfigError("experiment", f"no such file: {path}")
        return resolve_model_code(resolve_paths(read_toml(path), path.parent), path.parent)
    close = difflib.get_close_matches(spec, preset_names(), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ConfigError(
        "experiment",
        f"'{spec}' is neither a preset nor a .toml file{hint} (presets: {', '.join(preset_names())})",
    )
