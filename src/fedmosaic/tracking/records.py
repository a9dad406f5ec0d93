"""What a finished experiment gives an experiment tracker: a tree of runs with parameters, metrics and files.

An experiment's ``results.json`` becomes one :class:`TrackedRun` (the experiment) with one child
per compared run (F-CMs, Centralized, ...); a grid becomes a parent with one child per point,
each point holding its runs. Only what the output folder already holds is read, so the same
experiment gives the same tree on every engine and after a ``--resume``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILES = ("config.toml", "results.json", "summary.json", "report.md", "report.html", "table.md")
"""Files of an output folder logged as artifacts, where present."""
FOLDERS = ("model",)
"""Folders of an output folder logged as artifacts, where present."""


@dataclass
class TrackedRun:
    """One run as a tracker shows it.

    Parameters
    ----------
    name : str
        The run's name (the experiment's, a grid point's values, or a compared run's name).
    params : dict of str to str
        Flat ``section.key`` parameters.
    history : list of (int, dict of str to float)
        Per evaluated round, the round and its numeric metrics.
    final : dict of str to float
        The final metrics.
    files : list of Path
        Files and folders to keep as artifacts.
    children : list of TrackedRun
        Nested runs.
    """

    name: str
    params: dict[str, str] = field(default_factory=dict)
    history: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    children: list[TrackedRun] = field(default_factory=list)


def tracked_experiment(out_dir: Path, results: Mapping[str, Any]) -> TrackedRun:
    """The run tree of the experiment (or grid) whose ``results.json`` is ``results``, written in ``out_dir``.

    Examples
    --------
    >>> from pathlib import Path
    >>> results = {"experiment": "demo", "config": {"seed": 0, "train": {"lr": 0.1}}, "runs": [
    ...     {"name": "FedAvg", "method": "fedavg", "params": {}, "final": {"accuracy": 0.9},
    ...      "history": [{"round": 1, "metrics": {"accuracy": 0.8}}]}]}
    >>> tree = tracked_experiment(Path("nowhere"), results)
    >>> tree.name, tree.params, [(c.name, c.history, c.final) for c in tree.children]
    ('demo', {'seed': '0', 'train.lr': '0.1'}, [('FedAvg', [(1, {'accuracy': 0.8})], {'accuracy': 0.9})])
    """
    experiment = TrackedRun(str(results.get("experiment", out_dir.name)), flat_params(results.get("config", {})))
    experiment.files = _present(out_dir)
    if "points" in results:
        for point in results["points"]:
            folder = out_dir / str(point["folder"])
            point_results = json.loads((folder / "results.json").read_text())
            child = tracked_experiment(folder, point_results)
            child.name = ", ".join(f"{key}={value}" for key, value in point["values"].items())
            child.params = flat_params(point["values"])
            experiment.children.append(child)
        return experiment
    for run in results.get("runs", []):
        experiment.children.append(_tracked_run(run))
    return experiment


def _tracked_run(run: Mapping[str, Any]) -> TrackedRun:
    """A compared run of an experiment: its method, setting and parameters, per-round and final metrics."""
    params = {"method": str(run.get("method", "")), "setting": str(run.get("setting", ""))}
    params.update(flat_params(run.get("params", {}), prefix="params."))
    history = [
        (int(row["round"]), _numbers(row.get("metrics", {})))
        for row in run.get("history", [])
        if _numbers(row.get("metrics", {}))
    ]
    final = _numbers(run.get("final", {}))
    for key in ("bytes_up_total", "bytes_down_total", "wall_time_s"):
        if isinstance(run.get(key), int | float):
            final[key] = float(run[key])
    return TrackedRun(str(run.get("name", "run")), params, history, final)


def flat_params(values: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``values`` flattened to ``prefix`` + dotted keys, lists and scalars as JSON text.

    Examples
    --------
    >>> flat_params({"data": {"network": "asia"}, "hidden": [8, 4], "seed": 1})
    {'data.network': 'asia', 'hidden': '[8, 4]', 'seed': '1'}
    """
    flat: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            flat.update(flat_params(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value if isinstance(value, str) else json.dumps(value)
    return flat


def _numbers(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The finite numeric metrics (booleans and text left out)."""
    return {
        key: float(value)
        for key, value in metrics.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


def _present(out_dir: Path) -> list[Path]:
    return [out_dir / name for name in (*FILES, *FOLDERS) if (out_dir / name).exists()]
