"""Experiment tracking: a finished run read back from MLflow and from TensorBoard's event files."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from typer.testing import CliRunner

from fedmosaic.cli import app
from fedmosaic.errors import FedmosaicError
from fedmosaic.tracking import check_backend, track
from fedmosaic.tracking.mlflow_runs import default_uri

pytestmark = pytest.mark.xdist_group("tracking")

FAST = ["--set", "federation.rounds=3", "--set", "model.hidden=[8]", "--set", "partition.num_clients=3"]
RUNS = ["FedAvg", "FedProx", "Centralized", "Local"]


def _run(out: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["run", "digits-fedavg", *FAST, "--out", str(out), "--quiet", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A digits run of 3 rounds, logged to MLflow's default store and to TensorBoard."""
    out = tmp_path_factory.mktemp("tracked") / "run"
    _run(out, "--track", "mlflow", "--track", "tensorboard")
    return out


def _children(client: MlflowClient, experiment_id: str, parent: str) -> dict[str, Any]:
    runs = client.search_runs([experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    return {run.info.run_name: run for run in runs}


def test_mlflow_holds_the_config_per_round_metrics_final_metrics_and_files(tracked: Path) -> None:
    # Prepare
    client = MlflowClient(tracking_uri=default_uri(tracked))

    # Execute
    experiment = client.get_experiment_by_name("digits-fedavg")
    assert experiment is not None
    roots = client.search_runs([experiment.experiment_id], filter_string="attributes.run_name = 'digits-fedavg'")

    # Assert: one experiment run with the config, a child per compared run with its metrics.
    (root,) = roots
    assert root.data.params["federation.rounds"] == "3"
    assert root.data.params["data.dataset"] == "digits"
    files = {item.path for item in client.list_artifacts(root.info.run_id)}
    assert {"config.toml", "results.json", "summary.json", "report.html", "model"} <= files
    children = _children(client, experiment.experiment_id, root.info.run_id)
    assert sorted(children) == sorted(RUNS)
    fedavg = children["FedAvg"]
    assert fedavg.data.params["method"] == "fedavg"
    history = client.get_metric_history(fedavg.info.run_id, "accuracy")
    assert [metric.step for metric in history] == [1, 2, 3]
    assert 0.0 <= fedavg.data.metrics["final.accuracy"] <= 1.0


def test_tensorboard_event_files_hold_every_rounds_metrics(tracked: Path) -> None:
    # Prepare
    folder = tracked / "tensorboard" / "00-FedAvg"

    # Execute
    events = EventAccumulator(str(folder))
    events.Reload()

    # Assert
    accuracy = events.Scalars("accuracy")
    assert [event.step for event in accuracy] == [1, 2, 3]
    assert "final/accuracy" in events.Tags()["scalars"]


def test_a_finished_run_is_not_logged_twice(tracked: Path) -> None:
    # Prepare: --resume on a finished run returns its results; track it again.
    client = MlflowClient(tracking_uri=default_uri(tracked))

    # Execute
    output = _run(tracked, "--resume", "--track", "mlflow")

    # Assert: the first run is the only one.
    assert "already logged as run" in output
    experiment = client.get_experiment_by_name("digits-fedavg")
    assert experiment is not None
    assert len(client.search_runs([experiment.experiment_id])) == 1 + len(RUNS)


def test_a_grid_is_one_parent_with_a_child_per_point(tmp_path: Path) -> None:
    # Prepare
    out = tmp_path / "grid"
    grid = 'grid={axes = {seed = [0, 1]}, rows = "seed", columns = "seed", secondary = ""}'
    _run(out, "--set", grid, "--set", 'runs=[{name = "FedAvg", method = "fedavg"}]')
    client = MlflowClient(tracking_uri=default_uri(out))

    # Execute: a finished run logged afterwards.
    result = CliRunner().invoke(app, ["track", str(out), "--to", "mlflow"])

    # Assert
    assert result.exit_code == 0, result.output
    experiment = client.get_experiment_by_name("digits-fedavg")
    assert experiment is not None
    (root,) = client.search_runs([experiment.experiment_id], filter_string="attributes.run_name = 'digits-fedavg'")
    points = _children(client, experiment.experiment_id, root.info.run_id)
    assert sorted(points) == ["seed=0", "seed=1"]
    for point in points.values():
        assert list(_children(client, experiment.experiment_id, point.info.run_id)) == ["FedAvg"]


def test_a_missing_tracking_package_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)

    # Execute / Assert
    with pytest.raises(FedmosaicError, match=r"^--track mlflow: mlflow is not installed; .*fedmosaic\[tracking\]"):
        check_backend("mlflow")


def test_track_refuses_a_folder_without_results(tmp_path: Path) -> None:
    # Execute
    result = CliRunner().invoke(app, ["track", str(tmp_path), "--to", "tensorboard"])

    # Assert
    assert result.exit_code != 0
    assert isinstance(result.exception, FedmosaicError)
    assert "no results.json" in str(result.exception)


def test_an_unknown_backend_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    # Execute / Assert
    with pytest.raises(FedmosaicError, match="expected one of mlflow, tensorboard"):
        track(tmp_path, {"runs": []}, "wandb")
    assert not list(tmp_path.iterdir())
