"""FedAvg and FedProx: clients train the received model, the server averages by examples."""

import numpy as np
import pytest
import torch

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import (
    ClientContext,
    ClientState,
    Federation,
    InProcessGrid,
    Message,
    RoundContext,
    Schedule,
)
from fedmosaic.methods.arrays import model_to_arrays
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.train_params import TrainParams


def _blobs(n: int, seed: int) -> ArrayDataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
    x = (centres[y] + 0.5 * rng.standard_normal((n, 2))).astype(np.float32)
    return ArrayDataset(x, y.astype(np.int64), num_classes=3)


def _factory():
    return build_model(ModelParams(hidden=[8]), (2,), 3)


TRAIN = TrainParams(epochs=1, batch_size=8, lr=0.1)


def test_client_replies_trained_parameters_and_its_example_count() -> None:
    # Prepare
    data = _blobs(40, seed=1)
    client = FedAvgClient(_factory, data, TRAIN)
    start = model_to_arrays(_factory())
    # Execute
    reply = client.handle(Message(arrays=start), ClientState(), ClientContext(0, 1, seed=5))
    # Assert
    assert set(reply.arrays) == set(start)
    assert reply.metrics["num_examples"] == 40.0
    assert any(not np.array_equal(reply.arrays[k], start[k]) for k in start)


def test_client_training_is_a_function_of_message_and_context_seed() -> None:
    # Prepare
    data = _blobs(40, seed=1)
    start = model_to_arrays(_factory())
    # Execute
    a = FedAvgClient(_factory, data, TRAIN).handle(Message(arrays=start), ClientState(), ClientContext(0, 1, 5))
    b = FedAvgClient(_factory, data, TRAIN).handle(Message(arrays=start), ClientState(), ClientContext(0, 1, 5))
    c = FedAvgClient(_factory, data, TRAIN).handle(Message(arrays=start), ClientState(), ClientContext(0, 1, 6))
    # Assert
    assert all(np.array_equal(a.arrays[k], b.arrays[k]) for k in start)
    assert any(not np.array_equal(a.arrays[k], c.arrays[k]) for k in start)


def test_fedprox_keeps_the_update_closer_to_the_global_model_than_fedavg() -> None:
    # Prepare
    data = _blobs(64, seed=2)
    start = model_to_arrays(_factory())
    context = ClientContext(0, 1, seed=3)
    train = TrainParams(epochs=5, batch_size=8, lr=0.1)

    def drift(mu: float) -> float:
        reply = FedAvgClient(_factory, data, train, mu=mu).handle(Message(arrays=start), ClientState(), context)
        return sum(float(((reply.arrays[k] - start[k]) ** 2).sum()) for k in start)

    # Execute / Assert
    assert drift(mu=10.0) < 0.5 * drift(mu=0.0)


def test_server_averages_replies_weighted_by_examples() -> None:
    # Prepare: two clients with 10 and 30 examples whose replies are known.
    server = FedAvgServer(_factory, _blobs(10, seed=0))
    server.initialize(seed=0)
    names = list(server.params)
    replies = {
        0: Message(
            arrays={k: np.zeros_like(server.params[k]) for k in names},
            metrics={"num_examples": 10.0, "train_loss": 1.0},
        ),
        1: Message(
            arrays={k: np.ones_like(server.params[k]) for k in names}, metrics={"num_examples": 30.0, "train_loss": 3.0}
        ),
    }

    class FixedReplies(RoundContext):
        def exchange(self, messages, **options):
            return replies

    # Execute
    metrics = server.run_round(FixedReplies(round=1, clients=[0, 1], seed=0, grid=None))  # type: ignore[arg-type]
    # Assert
    for name in names:
        np.testing.assert_allclose(server.params[name], 0.75)
    assert metrics["train_loss"] == pytest.approx(2.5)


def test_fedavg_learns_a_separable_task_across_skewed_clients() -> None:
    # Prepare: each client holds mostly one class.
    full = _blobs(300, seed=4)
    parts = [np.flatnonzero(full.y == c) for c in range(3)]
    clients = [full.subset(p) for p in parts]
    server = FedAvgServer(_factory, _blobs(200, seed=5))
    grid = InProcessGrid(lambda k: FedAvgClient(_factory, clients[k], TRAIN), seed=0)
    # Execute
    history = Federation(server, grid, Schedule(num_clients=3), seed=0, rounds=15).run()
    # Assert
    assert history[-1].metrics["accuracy"] > 0.9
    assert history[-1].metrics["accuracy"] > history[0].metrics["accuracy"]


def test_server_initialisation_is_derived_from_the_seed() -> None:
    # Prepare
    a, b, c = (FedAvgServer(_factory, _blobs(4, 0)) for _ in range(3))
    # Execute
    a.initialize(seed=1)
    b.initialize(seed=1)
    c.initialize(seed=2)
    torch.manual_seed(123)  # the global generator does not matter
    # Assert
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    assert any(not np.array_equal(a.params[k], c.params[k]) for k in a.params)
