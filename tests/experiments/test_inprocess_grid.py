"""The engine of a run: parallel workers give exactly the results of one process."""

import json
import multiprocessing
from pathlib import Path

import pytest
import torch

from fedmosaic.errors import ConfigError
from fedmosaic.experiments import inprocess_grid, runner
from fedmosaic.experiments.config import FederationSection, load_config
from fedmosaic.experiments.inprocess_grid import make_grid, worker_count
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.federation import InProcessGrid, Schedule
from fedmosaic.federation.parallel import ParallelGrid

DIGITS = {
    "name": "digits",
    "seed": 3,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 5, "alpha": 0.5, "min_size": 20},
    "federation": {"rounds": 3, "fraction": 0.8},
    "model": {"hidden": [16]},
    "train": {"batch_size": 32, "lr": 0.1},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "FedCFA", "method": "fedcfa"},
    ],
}
ASIA = {
    "name": "asia",
    "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
    "concepts": {"num_clients": 6, "initial_clients": 3, "join_round": 3},
    "federation": {"rounds": 4},
    "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "cbm"}}}],
}


def _with_workers(source: dict, workers: int) -> dict:
    source = json.loads(json.dumps(source))
    source["federation"]["workers"] = workers
    return source


def _strip_times(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["config"]["federation"].pop("workers")
    for run in results["runs"]:
        run.pop("wall_time_s")
        for row in run["history"]:
            row.pop("wall_time_s")
    return results


@pytest.mark.parametrize("source", [DIGITS, ASIA], ids=["fedavg-fedcfa", "fcm-asia"])
def test_parallel_workers_give_exactly_the_sequential_results(source: dict, tmp_path: Path) -> None:
    # Execute
    sequential = run_experiment(load_config(_with_workers(source, 1)), tmp_path / "one")
    parallel = run_experiment(load_config(_with_workers(source, 2)), tmp_path / "two")
    # Assert
    assert _strip_times(parallel) == _strip_times(sequential)
    assert not multiprocessing.active_children()


def test_a_parallel_run_resumes_after_an_interrupt_to_the_uninterrupted_results(tmp_path: Path, monkeypatch) -> None:
    # Prepare: an uninterrupted reference, then a run interrupted in FedCFA's second round.
    config = load_config(_with_workers(DIGITS, 2))
    reference = run_experiment(config, tmp_path / "reference")
    original = runner.Federation._run_round
    calls = {"n": 0}

    def interrupted(self, rnd):
        calls["n"] += 1
        if calls["n"] == 3 + 2:
            raise KeyboardInterrupt
        return original(self, rnd)

    monkeypatch.setattr(runner.Federation, "_run_round", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, tmp_path / "out")
    monkeypatch.setattr(runner.Federation, "_run_round", original)
    assert not multiprocessing.active_children()
    # Execute
    resumed = run_experiment(config, tmp_path / "out", resume=True)
    # Assert
    assert _strip_times(resumed) == _strip_times(reference)


def test_workers_default_to_the_cores_when_a_round_has_several_clients() -> None:
    federation = FederationSection()
    assert worker_count(federation, Schedule(num_clients=20, fraction=0.5), cores=4) == 4
    assert worker_count(federation, Schedule(num_clients=20, fraction=0.1), cores=4) == 2
    assert worker_count(federation, Schedule(num_clients=1), cores=4) == 1
    assert worker_count(FederationSection(workers=1), Schedule(num_clients=20), cores=4) == 1


def test_one_worker_is_the_plain_in_process_engine_and_more_are_parallel() -> None:
    schedule = Schedule(num_clients=4)
    with make_grid(FederationSection(workers=1), lambda c: None, 0, schedule) as grid:
        assert isinstance(grid, InProcessGrid)
    with make_grid(FederationSection(workers=2), lambda c: None, 0, schedule, cores=2) as grid:
        assert isinstance(grid, ParallelGrid)
        assert grid.workers == 2


def test_off_the_cpu_clients_run_in_this_process_and_forked_workers_are_refused(monkeypatch) -> None:
    # Prepare: the run computes on a GPU (only its name is read here)
    monkeypatch.setattr(inprocess_grid, "compute_device", lambda: torch.device("cuda"))
    schedule = Schedule(num_clients=4)

    # Execute / Assert: by default one process; workers asked for are refused, naming the setting
    with make_grid(FederationSection(), lambda c: None, 0, schedule, cores=4) as grid:
        assert isinstance(grid, InProcessGrid)
    with pytest.raises(ConfigError, match=r"^federation.workers: worker processes are forked and cannot use cuda"):
        make_grid(FederationSection(workers=2), lambda c: None, 0, schedule, cores=4)


class _Stopped(Exception):
    """Raised by a recording engine once it has seen the job."""


def test_a_vertical_method_runs_its_parties_in_one_process_unless_workers_are_asked(monkeypatch, tmp_path) -> None:
    # Prepare: an engine that records the job of a vertical run, then stops
    jobs = []

    def record(engine, job, federate):  # type: ignore[no-untyped-def]
        jobs.append(job)
        raise _Stopped

    monkeypatch.setattr(runner.InProcessEngine, "run_job", record)
    vertical = {
        "name": "vertical",
        "data": {"dataset": "digits"},
        "vertical": {"num_parties": 4, "label_budget": 40, "train_rows": 120, "test_rows": 60},
        "federation": {"rounds": 2},
        "runs": [{"name": "FALSE-VFL", "method": "false-vfl", "params": {"stage1_rounds": 1}}],
    }

    # Execute
    with pytest.raises(_Stopped):
        run_experiment(load_config(vertical), tmp_path / "vertical")

    # Assert: the job is sequential, and its grid one process; workers asked for are still given
    assert [job.sequential for job in jobs] == [True]
    schedule = Schedule(num_clients=7)
    with make_grid(FederationSection(), lambda c: None, 0, schedule, cores=2, sequential=True) as grid:
        assert isinstance(grid, InProcessGrid)
    assert worker_count(FederationSection(workers=2), schedule, cores=2, sequential=True) == 2
