"""Parallel jobs: grid points and compared runs in parallel processes, outputs as if sequential."""

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from fedmosaic.experiments import runner
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.processes import job_cores, run_in_processes
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.federation import RoundRecord
from fedmosaic.federation.processes import WorkerFailed

GRID = {
    "name": "grid",
    "data": {"dataset": "digits"},
    "partition": {"num_clients": 3, "min_size": 20},
    "federation": {"rounds": 2},
    "model": {"hidden": [8]},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "Centralized", "method": "fedavg", "setting": "centralized"},
    ],
    "grid": {"axes": {"train.lr": [0.05, 0.2], "seed": [0]}, "rows": "train.lr", "columns": "seed", "secondary": None},
}
COMPARISON = {
    "name": "comparison",
    "seed": 2,
    "data": {"dataset": "digits"},
    "partition": {"num_clients": 4, "min_size": 20},
    "federation": {"rounds": 2},
    "model": {"hidden": [8]},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "FedProx", "method": "fedprox", "params": {"mu": 0.1}},
        {"name": "Local", "method": "fedavg", "setting": "local"},
    ],
}


class Recording:
    """A progress sink that records every event."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start_point(self, index: int, total: int, label: str) -> None:
        self.events.append(("point", index, total))

    def start_run(self, name: str, total_rounds: int) -> None:
        self.events.append(("start", name, total_rounds))

    def advance(self, name: str, record: RoundRecord) -> None:
        self.events.append(("advance", name, record.round))

    def finish_run(self, name: str) -> None:
        self.events.append(("finish", name))


def _without_times(node):
    if isinstance(node, dict):
        return {k: _without_times(v) for k, v in node.items() if k != "wall_time_s"}
    if isinstance(node, list):
        return [_without_times(v) for v in node]
    return node


def _slow_then(value: int, seconds: float):
    def task(progress):
        time.sleep(seconds)
        progress.start_run("run", 1)
        progress.advance("run", RoundRecord(1, "ok", 1, 1, [], 0, 0, 1, 0.0))
        progress.finish_run("run")
        return value

    return task


def test_results_come_back_in_task_order_whatever_order_tasks_finish_in() -> None:
    # Prepare: the first task finishes last.
    tasks = [_slow_then(0, 0.5), _slow_then(1, 0.0), _slow_then(2, 0.0)]
    progress, finished = Recording(), []
    # Execute
    results = run_in_processes(tasks, 2, progress, labels=["a", "b", "c"], on_done=lambda t, n: finished.append((t, n)))
    # Assert
    assert results == [0, 1, 2]
    assert finished[-1] == (0, 3)
    assert ("start", "a run", 1) in progress.events
    assert ("advance", "c run", 1) in progress.events
    assert progress.events.count(("finish", "b run")) == 1


def test_a_failing_task_is_a_one_line_error() -> None:
    def failing(progress):
        raise RuntimeError("no data here")

    with pytest.raises(WorkerFailed, match="RuntimeError: no data here"):
        run_in_processes([failing, _slow_then(1, 5.0)], 2, Recording())
    assert not multiprocessing.active_children()


def test_jobs_share_the_cores() -> None:
    assert job_cores(8, 2, 10) == 4
    assert job_cores(2, 4, 10) == 1
    assert job_cores(None, 1, 10) is None


def test_a_grid_with_parallel_jobs_writes_what_a_sequential_grid_writes(tmp_path: Path) -> None:
    # Execute
    sequential = run_experiment(load_config(GRID), tmp_path / "one")
    progress = Recording()
    parallel = run_experiment(load_config(GRID), tmp_path / "two", jobs=2, progress=progress)
    # Assert
    assert _without_times(parallel) == _without_times(sequential)
    for entry in sequential["points"]:
        ours = json.loads((tmp_path / "two" / entry["folder"] / "results.json").read_text())
        theirs = json.loads((tmp_path / "one" / entry["folder"] / "results.json").read_text())
        assert _without_times(ours) == _without_times(theirs)
    assert (tmp_path / "two" / "report.html").exists()
    assert ("point", 2, 2) in progress.events
    assert {e[1] for e in progress.events if e[0] == "start"} == {
        f"p{i} {run}" for i in range(2) for run in ("FedAvg", "Centralized")
    }


def test_a_grid_with_fewer_points_than_jobs_runs_each_points_runs_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: one point; record the jobs its runs are given.
    one_point = {**GRID, "grid": {**GRID["grid"], "axes": {"train.lr": [0.05], "seed": [0]}}}
    asked = []

    def recording(tasks, jobs, progress, **kwargs):
        asked.append((len(tasks), jobs))
        return run_in_processes(tasks, jobs, progress, **kwargs)

    monkeypatch.setattr(runner, "run_in_processes", recording)
    # Execute
    sequential = run_experiment(load_config(one_point), tmp_path / "one")
    parallel = run_experiment(load_config(one_point), tmp_path / "two", jobs=2)
    # Assert
    assert asked == [(2, 2)]
    assert _without_times(parallel) == _without_times(sequential)


def test_the_runs_of_a_comparison_run_in_parallel_with_the_sequential_results(tmp_path: Path) -> None:
    sequential = run_experiment(load_config(COMPARISON), tmp_path / "one")
    parallel = run_experiment(load_config(COMPARISON), tmp_path / "two", jobs=3)
    assert _without_times(parallel) == _without_times(sequential)
    assert (tmp_path / "two" / "report.md").read_text().count("FedProx") >= 1
