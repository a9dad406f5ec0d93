"""Tiny runs whose servers stay in memory, so a test can compare the exported model with the one the run tested.

Each configuration runs once per test session (the tests only read its
outputs). Concept data are autoencoded with one epoch, which keeps a run to
about a second.
"""

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from fedmosaic.data import bayesnet
from fedmosaic.experiments import runner, workloads
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.federation import ServerLogic
from fedmosaic.methods.vertical import false_vfl


@dataclasses.dataclass
class FinishedRun:
    """A finished run: its output folder, results, the servers it built (in order), its workload,
    and the class probabilities FALSE-VFL's server predicted, in order."""

    out: Path
    results: dict[str, Any]
    servers: list[ServerLogic]
    workload: Any
    vfl_predictions: list[Any]


DIGITS = {
    "name": "digits",
    "data": {"dataset": "digits"},
    "partition": {"scheme": "iid", "num_clients": 3},
    "federation": {"rounds": 2, "workers": 1},
    "model": {"hidden": [16]},
    "train": {"batch_size": 64, "lr": 0.1},
    "runs": [{"name": "FedAvg", "method": "fedavg"}, {"name": "FedCFA", "method": "fedcfa"}, {"name": "FedMix", "method": "fedmix"}],
}
VERTICAL = {
    "name": "vfl",
    "seed": 1,
    "data": {"dataset": "digits"},
    "vertical": {"num_parties": 2, "label_budget": 100, "train_rows": 300, "test_rows": 100, "test_missing": ["mcar:0.3", "mcar:0"]},
    "federation": {"rounds": 3, "workers": 1},
    "runs": [{"name": "FALSE-VFL", "method": "false-vfl", "params": {"stage1_rounds": 1, "latent": 4, "top_latent": 2, "hidden": 8}}],
}


def asia(family: str) -> dict[str, Any]:
    """F-CMs of one family on asia: 4 clients, 2 joining in round 2, 3 rounds."""
    return {
        "name": f"asia-{family}",
        "data": {"dataset": "bnlearn", "network": "asia", "samples": 1000},
        "concepts": {"num_clients": 4, "initial_clients": 2, "join_round": 2},
        "federation": {"rounds": 3, "workers": 1},
        "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
        "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": family}}}],
    }


@pytest.fixture(scope="session")
def digits_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> FinishedRun:
    """FedAvg, FedCFA and FedMix on digits."""
    return finished_run(DIGITS)


@pytest.fixture(scope="session")
def vfl_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> FinishedRun:
    """FALSE-VFL on digits cut into two parties, tested under two missingness settings."""
    return finished_run(VERTICAL)


@pytest.fixture(scope="session")
def asia_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> Callable[[str], FinishedRun]:
    """F-CMs on asia, by model family."""
    return lambda family: finished_run(asia(family))


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[dict[str, Any]], FinishedRun]:
    """Run a configuration (as a dict) once, keeping its servers."""
    done: dict[str, FinishedRun] = {}

    def run(source: dict[str, Any]) -> FinishedRun:
        key = json.dumps(source, sort_keys=True)
        if key not in done:
            done[key] = _run(source, tmp_path_factory.mktemp(source["name"]))
        return done[key]

    return run


def _run(source: dict[str, Any], out: Path) -> FinishedRun:
    servers: list[ServerLogic] = []
    predictions: list[Any] = []
    original = runner.get_method
    predict = false_vfl.predictive_probabilities

    def recorded(*args: Any) -> Any:
        predictions.append(predict(*args).numpy().copy())
        return predict(*args)

    def recording(name: str, **kwargs: Any):
        method = original(name, **kwargs)

        def build(task: Any, params: Any):
            server, clients = method.build(task, params)
            servers.append(server)
            return server, clients

        return dataclasses.replace(method, build=build)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "get_method", recording)
        patch.setattr(false_vfl, "predictive_probabilities", recorded)
        patch.setattr(workloads, "sample_concept_splits", functools.partial(bayesnet.sample_concept_splits, epochs=1))
        config = load_config(source)
        results = run_experiment(config, out / "run")
        workload = prepare_workload(config)
    return FinishedRun(out / "run", results, servers, workload, predictions)
