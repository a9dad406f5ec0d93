"""The fedmosaic-fedadam plugin, installed: its components registered, FedAdam's step, its dataset and model.

Run with the plugin installed (``pip install -e examples/fedmosaic-fedadam``):
fedmosaic finds the components through the installed package's entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.datasets import DATASETS
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.federation import ClientLogic, Federation, InProcessGrid, Schedule, ServerLogic
from fedmosaic.methods.architectures import MODELS
from fedmosaic.methods.horizontal.fedavg.build import build_fedavg
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.models import ModelParams
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.training import TrainParams
from fedmosaic.testing import check_method

from fedmosaic_fedadam.data import BLOBS, NUM_CLASSES, load_blobs
from fedmosaic_fedadam.method import FEDADAM, build_fedadam
from fedmosaic_fedadam.model import TINY_CONVNET, tiny_convnet
from fedmosaic_fedadam.params import FedAdamParams
from fedmosaic_fedadam.server import FIRST_MOMENT, SECOND_MOMENT, FedAdamServer

PACKAGE = "fedmosaic-fedadam"
EXPERIMENT = Path(__file__).resolve().parents[1] / "fedadam-blobs.toml"
SEED = 3
PARAMS = FedAdamParams(server_lr=0.05, beta1=0.5, beta2=0.9, tau=0.01)
COMPONENTS = ((METHODS, "fedadam"), (MODELS, "tiny-convnet"), (DATASETS, "blobs"))


def _task() -> HorizontalTask:
    """Three clients of blobs and the tiny CNN, 40 images each: a round takes milliseconds."""
    splits = load_blobs(seed=SEED)
    clients = [splits.train.subset(np.arange(40 * k, 40 * (k + 1))) for k in range(3)]
    model = ModelParams(kind="tiny-convnet", args={"width": 4})
    return HorizontalTask(clients, splits.test, model, TrainParams(batch_size=8, lr=0.1))


def _one_round(built: tuple[ServerLogic, Callable[[int], ClientLogic]], clients: int) -> FedAdamServer | FedAvgServer:
    """The server of ``built`` after one round with every client."""
    server, factory = built
    Federation(server, InProcessGrid(factory, SEED), Schedule(clients), seed=SEED, rounds=1).run()
    assert isinstance(server, FedAvgServer)
    return server


def _fedadam_round(task: HorizontalTask) -> FedAdamServer:
    server = _one_round(build_fedadam(task, PARAMS), len(task.clients))
    assert isinstance(server, FedAdamServer)
    return server


def test_the_components_are_registered_by_the_plugin_s_entry_points() -> None:
    # Execute
    registered = [(registry[name], registry.package(name)) for registry, name in COMPONENTS]

    # Assert: the objects the entry points name, under the plugin's distribution, without a problem line
    assert registered == [(FEDADAM, PACKAGE), (TINY_CONVNET, PACKAGE), (BLOBS, PACKAGE)]
    assert FEDADAM.kind == "classification"
    assert FEDADAM.params is FedAdamParams
    assert not [line for r in (METHODS, MODELS, DATASETS) for line in r.problems if PACKAGE in line]


def test_one_round_is_an_adam_step_on_the_mean_client_update() -> None:
    # Prepare: FedAvg's round from the same start gives the mean of the clients' models
    task = _task()
    start = FedAdamServer(task.model_factory(), task.test, PARAMS)
    start.initialize(SEED)
    mean = _one_round(build_fedavg(task, FedAvgParams()), len(task.clients)).params
    beta1, beta2, tau, lr = PARAMS.beta1, PARAMS.beta2, PARAMS.tau, PARAMS.server_lr

    # Execute
    server = _fedadam_round(task)

    # Assert: from zero moments, m = (1 - beta1) delta, v = (1 - beta2) delta^2, x += lr m / (sqrt(v) + tau)
    assert set(server.first_moment) == set(server.second_moment) == set(start.params)  # no buffers in this model
    for name, x in start.params.items():
        delta = mean[name].astype(np.float64) - x
        m, v = (1 - beta1) * delta, (1 - beta2) * delta**2
        np.testing.assert_allclose(server.first_moment[name], m, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(server.second_moment[name], v, rtol=1e-5, atol=1e-10)
        np.testing.assert_allclose(server.params[name], x + lr * m / (np.sqrt(v) + tau), rtol=1e-5, atol=1e-6)
        assert server.params[name].dtype == x.dtype


def test_the_moments_are_part_of_the_server_state_so_a_resumed_run_continues_them() -> None:
    # Prepare
    task = _task()
    server = _fedadam_round(task)
    fresh = FedAdamServer(task.model_factory(), task.test, PARAMS)

    # Execute
    state = server.state_dict()
    fresh.load_state_dict(state)

    # Assert
    names = set(server.params)
    assert set(state.arrays) == names | {FIRST_MOMENT + n for n in names} | {SECOND_MOMENT + n for n in names}
    for restored, kept in ((fresh.params, server.params), (fresh.first_moment, server.first_moment)):
        assert restored.keys() == kept.keys()
        assert all(np.array_equal(restored[n], kept[n]) for n in kept)
    assert all(np.array_equal(fresh.second_moment[n], server.second_moment[n]) for n in names)


@pytest.mark.parametrize(("key", "value"), [("beta1", 1.0), ("beta2", -0.1), ("tau", 0.0), ("server_lr", 0.0)])
def test_bad_parameters_are_refused_on_one_line_naming_the_field(key: str, value: float) -> None:
    # Prepare
    raw = apply_overrides(resolve_experiment(str(EXPERIMENT)), [f"runs.1.params.{key}={value}"])

    # Execute
    with pytest.raises(ConfigError) as info:
        load_config(raw)

    # Assert
    assert info.value.field == f"runs.1.params.{key}"
    assert "\n" not in str(info.value)


def test_blobs_are_made_from_the_seed_with_four_balanced_classes() -> None:
    # Execute
    splits, again, other = load_blobs(seed=1), load_blobs(seed=1), load_blobs(seed=2)
    held_out = load_blobs(seed=1, test_fraction=0.5)

    # Assert
    assert splits.train.x.shape == (900, 1, 8, 8)
    assert (splits.train.x.dtype, splits.train.y.dtype) == (np.dtype(np.float32), np.dtype(np.int64))
    assert np.array_equal(splits.train.x, again.train.x)
    assert not np.array_equal(splits.train.x, other.train.x)
    labels = np.concatenate([splits.train.y, splits.test.y])
    assert np.bincount(labels).tolist() == [300] * NUM_CLASSES
    assert (len(held_out.train), len(held_out.test)) == (600, 600)
    with pytest.raises(ValueError, match="test_fraction"):
        load_blobs(test_fraction=1.0)


def test_the_tiny_convnet_maps_images_to_logits_and_refuses_flat_inputs() -> None:
    # Prepare
    data = load_blobs().test

    # Execute
    model = tiny_convnet(data.x.shape[1:], NUM_CLASSES, width=4)

    # Assert
    assert tuple(model(torch.from_numpy(data.x[:5])).shape) == (5, NUM_CLASSES)
    with pytest.raises(ValueError, match="needs image inputs"):
        tiny_convnet((64,), NUM_CLASSES)
    with pytest.raises(ValueError, match="width"):
        tiny_convnet((1, 8, 8), NUM_CLASSES, width=0)


def test_a_short_federation_improves_accuracy_over_its_first_round(tmp_path: Path) -> None:
    # Prepare: the example experiment, cut to three rounds
    config = load_config(apply_overrides(resolve_experiment(str(EXPERIMENT)), ["federation.rounds=3"]))

    # Execute
    results = run_experiment(config, tmp_path / "run")

    # Assert
    runs = {run["name"]: run for run in results["runs"]}
    assert set(runs) == {"FedAvg", "FedAdam"}
    accuracy = [record["metrics"]["accuracy"] for record in runs["FedAdam"]["history"]]
    assert len(accuracy) == 3
    assert accuracy[-1] > accuracy[0] + 0.1
    assert (tmp_path / "run" / "summary.json").is_file()


def test_fedadam_passes_fedmosaic_s_method_contract(tmp_path: Path) -> None:
    # Execute / Assert: runs, resumes exactly, drops malformed replies, refuses bad parameters,
    # survives a checkpoint, and every runtime feature it declares acts on it (raises ContractError otherwise)
    check_method(FEDADAM, tmp_path)
