"""Tiny runs whose servers stay in memory, so a test can compare the exported model with the one the run tested.

Each configuration runs once per test session (the tests only read its
outputs). Concept data are autoencoded with one epoch, which keeps a run to
about a second.
"""

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.data import bayesnet
from fedmosaic.experiments import runner, workloads
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.federation import ServerLogic
from fedmosaic.methods.vertical.false_vfl import server as false_vfl_server
from fedmosaic.methods.vertical.split import baselines
from fedmosaic.methods.vertical.split import server as split_server


@dataclasses.dataclass
class FinishedRun:
    """A finished run, and what its servers predicted.

    Its output folder, results, the servers it built (in order), its workload, the class probabilities
    FALSE-VFL's server predicted, in order, and, by run index, those of the votes whose accuracy the
    split-network methods' servers counted, in order.
    """

    out: Path
    results: dict[str, Any]
    servers: list[ServerLogic]
    workload: Any
    vfl_predictions: list[Any]
    split_predictions: dict[int, list[Any]]


DIGITS = {
    "name": "digits",
    "data": {"dataset": "digits"},
    "partition": {"scheme": "iid", "num_clients": 3},
    "federation": {"rounds": 2, "workers": 1},
    "model": {"hidden": [16]},
    "train": {"batch_size": 64, "lr": 0.1},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "FedCFA", "method": "fedcfa"},
        {"name": "FedMix", "method": "fedmix"},
    ],
}
VERTICAL = {
    "name": "vfl",
    "seed": 1,
    "data": {"dataset": "digits"},
    "vertical": {
        "num_parties": 2,
        "label_budget": 100,
        "train_rows": 300,
        "test_rows": 100,
        "test_missing": ["mcar:0.3", "mcar:0"],
    },
    "federation": {"rounds": 3, "workers": 1},
    "runs": [
        {
            "name": "FALSE-VFL",
            "method": "false-vfl",
            "params": {"stage1_rounds": 1, "latent": 4, "top_latent": 2, "hidden": 8},
        }
    ],
}

SPLIT = {
    "name": "split",
    "seed": 2,
    "data": {"dataset": "digits"},
    "vertical": {
        "num_parties": 3,
        "split": "even",
        "label_budget": 150,
        "train_rows": 300,
        "test_rows": 100,
        "test_missing": ["mcar:0.4", "mcar:0"],
    },
    "federation": {"rounds": 3, "workers": 1},
    "runs": [
        {"name": name, "method": method, "params": {"hidden": 8, "embedding": 4, **extra}}
        for name, method, extra in [
            ("Local", "vfl-local", {}),
            ("Vanilla VFL", "vanilla-vfl", {}),
            ("PlugVFL", "plug-vfl", {}),
            ("LASER-VFL", "laser-vfl", {}),
            ("FedHSSL", "fedhssl", {"pretrain_rounds": 1, "passes": 1}),
        ]
    ],
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


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist names each test by its group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put this package's tests in one xdist group (``model_runs``), hence in one worker.

    A session fixture runs once in every worker that uses it; in one worker each
    run below trains once instead of up to once per worker.
    """
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.xdist_group("model_runs"))


@pytest.fixture(scope="session")
def digits_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> FinishedRun:
    """FedAvg, FedCFA and FedMix on digits."""
    return finished_run(DIGITS)


@pytest.fixture(scope="session")
def vfl_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> FinishedRun:
    """FALSE-VFL on digits cut into two parties, tested under two missingness settings."""
    return finished_run(VERTICAL)


@pytest.fixture(scope="session")
def split_run(finished_run: Callable[[dict[str, Any]], FinishedRun]) -> FinishedRun:
    """Local, Vanilla VFL, PlugVFL, LASER-VFL and FedHSSL on digits cut into three parties, tested under two missingness settings."""
    return finished_run(SPLIT)


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
    split_predictions: dict[int, list[Any]] = {}
    original = runner.get_method
    predict, count = false_vfl_server.predictive_probabilities, split_server.accuracy

    def recorded(*args: Any) -> Any:
        predictions.append(predict(*args).numpy().copy())
        return predict(*args)

    def counted(votes: baselines.Votes, y: Any) -> float:
        split_predictions.setdefault(len(servers) - 1, []).append(baselines.probabilities(votes).numpy().copy())
        return count(votes, y)

    def recording(name: str, **kwargs: Any):
        method = original(name, **kwargs)

        def build(task: Any, params: Any):
            server, clients = method.build(task, params)
            servers.append(server)
            return server, clients

        return dataclasses.replace(method, builder=build)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "get_method", recording)
        patch.setattr(false_vfl_server, "predictive_probabilities", recorded)
        patch.setattr(split_server, "accuracy", counted)
        patch.setattr(workloads, "sample_concept_splits", functools.partial(bayesnet.sample_concept_splits, epochs=1))
        config = load_config(source)
        results = run_experiment(config, out / "run")
        workload = prepare_workload(config)
    return FinishedRun(out / "run", results, servers, workload, predictions, split_predictions)
