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
