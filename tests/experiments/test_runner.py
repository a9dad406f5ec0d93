"""Running an experiment: identical partitions, reproducible results, resumable runs."""

import json
from pathlib import Path

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments import runner
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.workloads import prepare_classification as prepare_data

SMALL = {
    "name": "small",
    "seed": 3,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 4, "alpha": 0.5, "min_size": 20},
    "federation": {"rounds": 4},
    "model": {"hidden": [16]},
    "train": {"batch_size": 32, "lr": 0.1},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "FedProx", "method": "fedprox", "params": {"mu": 0.1}},
        {"name": "Centralized", "method": "fedavg", "setting": "centralized"},
        {"name": "Local", "method": "fedavg", "setting": "local"},
    ],
}


def _strip_times(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    for run in results["runs"]:
        run.pop("wall_time_s")
        for row in run["history"]:
            row.pop("wall_time_s")
    return results


def test_a_run_writes_results_summary_and_report(tmp_path: Path) -> None:
    # Execute
    results = run_experiment(load_config(SMALL), tmp_path / "out")
    # Assert
    out = tmp_path / "out"
    assert {"results.json", "summary.json", "report.md", "report.html", "config.toml"} <= {
        p.name for p in out.iterdir()
    }
    assert not (out / "checkpoints").exists()
    saved = json.loads((out / "results.json").read_text())
    assert saved["seed"] == 3
    assert saved["config"]["partition"]["num_clients"] == 4
    assert [run["name"] for run in saved["runs"]] == ["FedAvg", "FedProx", "Centralized", "Local"]
    fedavg = saved["runs"][0]
    assert len(fedavg["history"]) == 4
    assert {"accuracy", "loss"} <= set(fedavg["final"])
    assert fedavg["bytes_up_total"] == sum(row["bytes_up"] for row in fedavg["history"]) > 0
    summary = json.loads((out / "summary.json").read_text())
    assert [row["name"] for row in summary["rows"]] == ["FedAvg", "FedProx", "Centralized", "Local"]
    assert "accuracy_std" in saved["runs"][3]["final"]
    assert results == saved


def test_same_seed_gives_identical_results_and_another_seed_does_not(tmp_path: Path) -> None:
    config = load_config(SMALL)
    first = run_experiment(config, tmp_path / "a")
    second = run_experiment(config, tmp_path / "b")
    other = run_experiment(load_config({**SMALL, "seed": 4}), tmp_path / "c")
    assert _strip_times(first) == _strip_times(second)
    assert first["runs"][0]["final"] != other["runs"][0]["final"]


def test_every_run_of_an_experiment_sees_identical_partitions() -> None:
    config = load_config(SMALL)
    a, b = prepare_data(config), prepare_data(config)
    assert [c.y.tolist() for c in a.clients] == [c.y.tolist() for c in b.clients]


def test_centralized_counts_the_pooled_data_as_uploaded_and_local_counts_nothing(tmp_path: Path) -> None:
    results = run_experiment(load_config(SMALL), tmp_path / "out")
    central, local = results["runs"][2], results["runs"][3]
    data = prepare_data(load_config(SMALL))
    assert central["bytes_up_total"] == sum(c.x.nbytes + c.y.nbytes for c in data.clients)
    assert local["bytes_up_total"] == local["bytes_down_total"] == 0


def test_resume_after_a_crash_gives_exactly_the_uninterrupted_results(tmp_path: Path, monkeypatch) -> None:
    # Prepare: an uninterrupted reference, then a run that dies in FedProx's third round.
    config = load_config(SMALL)
    reference = run_experiment(config, tmp_path / "reference")
    original = runner.Federation._run_round
    calls = {"n": 0}

    def crashing(self, rnd):
        calls["n"] += 1
        if calls["n"] == 4 + 3:  # FedAvg's 4 rounds, then round 3 of FedProx
            raise KeyboardInterrupt
        return original(self, rnd)

    monkeypatch.setattr(runner.Federation, "_run_round", crashing)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, tmp_path / "out")
    monkeypatch.setattr(runner.Federation, "_run_round", original)
    assert not (tmp_path / "out" / "results.json").exists()
    # Execute
    resumed = run_experiment(config, tmp_path / "out", resume=True)
    # Assert
    assert _strip_times(resumed) == _strip_times(reference)


def test_an_occupied_output_folder_needs_resume_or_overwrite(tmp_path: Path) -> None:
    # One run of one round: what is checked is the folder, not the training
    config = load_config({**SMALL, "federation": {"rounds": 1}, "runs": SMALL["runs"][:1]})
    run_experiment(config, tmp_path / "out")
    with pytest.raises(ConfigError, match=r"--resume .* --overwrite"):
        run_experiment(config, tmp_path / "out")
    assert run_experiment(config, tmp_path / "out", resume=True)["experiment"] == "small"
    assert run_experiment(config, tmp_path / "out", overwrite=True)["experiment"] == "small"


def test_bad_data_is_reported_before_anything_is_written(tmp_path: Path) -> None:
    config = load_config({**SMALL, "partition": {"num_clients": 5000}})
    with pytest.raises(ConfigError, match="more clients"):
        run_experiment(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()
