"""Experiment tracking: a finished experiment's runs logged to MLflow or TensorBoard.

A run is logged once it has completed (a grid once every point has), from what its output folder
holds: the configuration as parameters, every evaluated round's metrics with the round as the step,
the final metrics, and (MLflow) the configuration, results, summary, report and model folder as
files. An output folder records where it was logged (``tracking.json``), so resuming or rerunning a
finished experiment does not log it twice.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from fedmosaic.atomic import write_json
from fedmosaic.errors import FedmosaicError
from fedmosaic.tracking.mlflow_runs import default_uri, log_to_mlflow
from fedmosaic.tracking.records import tracked_experiment
from fedmosaic.tracking.tensorboard_runs import write_tensorboard

Backend = Literal["mlflow", "tensorboard"]
BACKENDS: tuple[Backend, ...] = ("mlflow", "tensorboard")
RECORD = "tracking.json"
"""Where an output folder records the trackers it was logged to."""

_PACKAGES = {"mlflow": ("mlflow", "mlflow-skinny"), "tensorboard": ("tensorboard", "tensorboard")}


def track(out_dir: Path, results: Mapping[str, Any], backend: str, uri: str | None = None) -> str:
    """Log the experiment in ``out_dir`` (its ``results.json`` content is ``results``); a line saying where.

    Parameters
    ----------
    out_dir : Path
        The experiment's output folder.
    results : mapping
        Its results document.
    backend : {"mlflow", "tensorboard"}
        The tracker.
    uri : str or None
        MLflow's tracking URI; default ``MLFLOW_TRACKING_URI`` if set, else an SQLite store in ``out_dir``.

    Raises
    ------
    FedmosaicError
        For an unknown backend, or one whose package is not installed.
    """
    check_backend(backend)
    if backend == "tensorboard":
        folder = write_tensorboard(tracked_experiment(out_dir, results), out_dir)
        return f"tensorboard: tensorboard --logdir {folder}"
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_uri(out_dir)
    record = _read_record(out_dir)
    logged = record.get("mlflow", {})
    if logged.get("uri") == uri:
        return f"mlflow: already logged as run {logged['run_id']} ({uri})"
    run_id = log_to_mlflow(tracked_experiment(out_dir, results), out_dir, uri)
    write_json(out_dir / RECORD, {**record, "mlflow": {"uri": uri, "run_id": run_id}})
    return f"mlflow: run {run_id} in {uri}"


def check_backend(backend: str) -> None:
    """Refuse, on one line, a backend that is unknown or whose package is missing.

    Examples
    --------
    >>> check_backend("wandb")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.FedmosaicError: --track: expected one of mlflow, tensorboard (got 'wandb')
    """
    if backend not in _PACKAGES:
        raise FedmosaicError(f"--track: expected one of {', '.join(BACKENDS)} (got {backend!r})")
    module, package = _PACKAGES[backend]
    if importlib.util.find_spec(module) is None:
        raise FedmosaicError(
            f"--track {backend}: {module} is not installed; install fedmosaic's tracking extra"
            f" (pip install 'fedmosaic[tracking]', or pip install {package})"
        )


def _read_record(out_dir: Path) -> dict[str, Any]:
    path = out_dir / RECORD
    record: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    return record
