"""Grids of experiments: one experiment per combination, a table across them."""

import json
import shutil
from pathlib import Path

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import grid_points, load_config
from fedmosaic.experiments.runner import run_experiment

GRID = {
    "name": "tiny-grid",
    "description": "two seeds x two learning rates on digits",
    "data": {"dataset": "digits"},
    "partition": {"num_clients": 3, "min_size": 20},
    "federation": {"rounds": 2},
    "model": {"hidden": [8]},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "Centralized", "method": "fedavg", "setting": "centralized"},
    ],
    "grid": {
        "axes": {"train.lr": [0.05, 0.2], "seed": [0, 1]},
        "rows": "train.lr",
        "columns": "seed",
        "metric": "accuracy",
        "secondary": None,
    },
}


def test_grid_points_are_every_combination_in_axis_order() -> None:
    points = grid_points(GRID)
    assert [values for values, _ in points] == [
        {"train.lr": 0.05, "seed": 0},
        {"train.lr": 0.05, "seed": 1},
        {"train.lr": 0.2, "seed": 0},
        {"train.lr": 0.2, "seed": 1},
    ]
    assert points[3][1]["train"]["lr"] == 0.2
    assert points[3][1]["seed"] == 1
    assert "grid" not in points[0][1]


def test_a_wildcard_axis_sets_every_run() -> None:
    source = {
        **GRID,
        "grid": {**GRID["grid"], "axes": {"runs.*.setting": ["local"], "seed": [0]}, "rows": "seed", "columns": "seed"},
    }
    ((_, point),) = grid_points(source)
    assert [run["setting"] for run in point["runs"]] == ["local", "local"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"rows": "nope"}, "grid.rows"),
        ({"columns": "nope"}, "grid.columns"),
        ({"axes": {"train.lr": [0.1], "partition.alpha": [0.5, -1.0], "seed": [0]}}, "partition.alpha"),
    ],
)
def test_invalid_grids_are_reported_with_their_field(change: dict, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({**GRID, "grid": {**GRID["grid"], **change}})
    assert info.value.field == field


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """:data:`GRID` run once for the module: its results and its output folder (tests copy it to change it).

    Its tests run in one xdist group (``grid_run``), hence in one worker and one run.
    """
    out = tmp_path_factory.mktemp("grid") / "out"
    return run_experiment(load_config(GRID), out), out


@pytest.mark.xdist_group("grid_run")
def test_a_grid_runs_every_point_and_tabulates_the_metric(grid_run: tuple[dict, Path]) -> None:
    # Execute (the module's run)
    results, out = grid_run

    # Assert
    assert len(results["points"]) == 4
    for entry in results["points"]:
        assert (out / entry["folder"] / "results.json").exists()
    table = results["table"]
    assert table["header"] == ["train.lr", "run", "0", "1"]
    assert [row[:2] for row in table["rows"]] == [
        ["0.05", "FedAvg"],
        ["0.05", "Centralized"],
        ["0.2", "FedAvg"],
        ["0.2", "Centralized"],
    ]
    point = json.loads((out / results["points"][2]["folder"] / "results.json").read_text())
    expected = f"{100 * point['runs'][0]['final']['accuracy']:.1f}"  # one seed: no spread
    assert table["rows"][2][2] == expected
    assert "| 0.2 | FedAvg |" in (out / "report.md").read_text().replace("\\\\", "")
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["rows"]) == 8


@pytest.mark.xdist_group("grid_run")
def test_a_grid_resumes_without_rerunning_finished_points(grid_run: tuple[dict, Path], tmp_path: Path) -> None:
    first, finished = grid_run
    shutil.copytree(finished, tmp_path / "out")
    config = load_config(GRID)
    marker = tmp_path / "out" / first["points"][0]["folder"] / "results.json"
    stamp = marker.stat().st_mtime_ns
    (tmp_path / "out" / "results.json").unlink()
    again = run_experiment(config, tmp_path / "out", resume=True)
    assert marker.stat().st_mtime_ns == stamp
    assert again["table"] == first["table"]
