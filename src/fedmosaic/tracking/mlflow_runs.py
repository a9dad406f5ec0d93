"""Log a run tree to MLflow: parameters, per-round metrics (the round as the step), final metrics and files.

By default the tracking store is an SQLite file in the output folder (``mlflow.db``, artifacts in
``mlartifacts/``), so nothing has to be started; ``mlflow ui --backend-store-uri sqlite:///OUT/mlflow.db``
shows it. A tracking URI (``http://...``, ``sqlite:///...``, or ``MLFLOW_TRACKING_URI``) logs to that
store instead. Nested runs carry MLflow's ``mlflow.parentRunId`` tag.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from fedmosaic.tracking.records import TrackedRun

if TYPE_CHECKING:
    from mlflow import MlflowClient

PARAM_LENGTH = 6000
"""MLflow's longest parameter value; longer ones (the full config is also logged as a file) are cut."""
BATCH = 100
"""Parameters (and metrics, a tenth of MLflow's limit) per ``log_batch`` call."""

T = TypeVar("T")


def default_uri(out_dir: Path) -> str:
    """The SQLite store in ``out_dir``.

    Examples
    --------
    >>> default_uri(Path("/runs/demo"))
    'sqlite:////runs/demo/mlflow.db'
    """
    return f"sqlite:///{out_dir.resolve() / 'mlflow.db'}"


def log_to_mlflow(tree: TrackedRun, out_dir: Path, uri: str) -> str:
    """Log ``tree`` as an MLflow experiment named after its root (created if new); the root run's id.

    Parameters
    ----------
    tree : TrackedRun
        The experiment and its nested runs.
    out_dir : Path
        The output folder (artifacts of a new experiment on the default store go to ``mlartifacts/`` there).
    uri : str
        The tracking URI.
    """
    from mlflow import MlflowClient

    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    client = MlflowClient(tracking_uri=uri)
    existing = client.get_experiment_by_name(tree.name)
    if existing is not None:
        experiment_id = existing.experiment_id
    else:
        location = (out_dir.resolve() / "mlartifacts").as_uri() if uri == default_uri(out_dir) else None
        experiment_id = client.create_experiment(tree.name, artifact_location=location)
    return _log(client, experiment_id, tree, parent=None)


def _log(client: MlflowClient, experiment_id: str, run: TrackedRun, parent: str | None) -> str:
    """Log ``run`` and its children; its run id."""
    from mlflow.entities import Metric, Param

    tags = {} if parent is None else {"mlflow.parentRunId": parent}
    run_id: str = client.create_run(experiment_id, run_name=run.name, tags=tags).info.run_id
    params = [Param(key, value[:PARAM_LENGTH]) for key, value in run.params.items()]
    metrics = [Metric(key, value, 0, step) for step, row in run.history for key, value in row.items()]
    last = run.history[-1][0] if run.history else 0
    metrics += [Metric(f"final.{key}", value, 0, last) for key, value in run.final.items()]
    for chunk in _chunks(params, BATCH):
        client.log_batch(run_id, params=chunk)
    for metric_chunk in _chunks(metrics, BATCH * 10):
        client.log_batch(run_id, metrics=metric_chunk)
    for path in run.files:
        if path.is_dir():
            client.log_artifacts(run_id, str(path), artifact_path=path.name)
        else:
            client.log_artifact(run_id, str(path))
    for child in run.children:
        _log(client, experiment_id, child, parent=run_id)
    client.set_terminated(run_id)
    return run_id


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
