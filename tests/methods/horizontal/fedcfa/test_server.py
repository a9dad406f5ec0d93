"""The FedCFA server: FedAvg of the models, global average dataset broadcast next round, state."""

import numpy as np
import pytest

from fedmosaic.federation import Message, RoundContext
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.server import FedCFAServer
from fedmosaic.methods.horizontal.models import ModelParams, build_model


def _factory():
    return build_model(ModelParams(hidden=[8]), (2,), 3)


class ScriptedRound(RoundContext):
    """A round's context that records what is sent and answers with fixed replies (the mean as its rule)."""

    def __init__(self, rnd: int, replies: dict[int, Message]) -> None:
        super().__init__(round=rnd, clients=sorted(replies), seed=0, grid=None)  # type: ignore[arg-type]
        self.replies = replies
        self.sent: dict[int, Message] = {}

    def exchange(self, messages, **options):
        self.sent = dict(messages)
        return self.replies


def _reply(server: FedCFAServer, value: float, examples: float, means: int) -> Message:
    arrays = {k: np.full_like(v, value) for k, v in server.params.items()}
    arrays["chunk_x"] = np.full((means, 2), value, np.float32)
    arrays["chunk_y"] = np.tile(np.eye(3, dtype=np.float32)[[int(value) % 3]], (means, 1))
    return Message(arrays=arrays, metrics={"num_examples": examples, "train_loss": value})


def _server(blobs, **params) -> FedCFAServer:
    server = FedCFAServer(_factory, blobs(10, 0), FedCFAParams(**params))
    server.initialize(seed=0)
    return server


def test_round_one_sends_no_average_dataset_and_the_next_round_sends_the_chunk_means(blobs) -> None:
    # Prepare: the previous round's means only
    server = _server(blobs, average_dataset="previous")
    first = ScriptedRound(1, {0: _reply(server, 0.0, 10.0, means=2), 2: _reply(server, 1.0, 30.0, means=3)})
    # Execute
    metrics = server.run_round(first)  # type: ignore[arg-type]
    second = ScriptedRound(2, {1: _reply(server, 2.0, 5.0, means=1)})
    server.run_round(second)  # type: ignore[arg-type]
    # Assert
    assert set(first.sent[0].arrays) == set(server.params)
    sent = second.sent[1].arrays
    np.testing.assert_array_equal(sent["avg_x"], np.array([[0.0, 0.0]] * 2 + [[1.0, 1.0]] * 3, np.float32))
    np.testing.assert_array_equal(sent["avg_y"], np.eye(3, dtype=np.float32)[[0, 0, 1, 1, 1]])
    assert metrics["train_loss"] == pytest.approx(0.75)
    np.testing.assert_array_equal(server.average["avg_x"], np.full((1, 2), 2.0, np.float32))


def test_models_are_averaged_by_examples_and_means_are_not_part_of_the_model(blobs) -> None:
    # Prepare
    server = _server(blobs)
    names = set(server.params)
    replies = {0: _reply(server, 0.0, 10.0, means=2), 1: _reply(server, 1.0, 30.0, means=4)}
    scripted = ScriptedRound(1, replies)
    # Execute
    server.run_round(scripted)  # type: ignore[arg-type]
    # Assert
    assert set(server.params) == names
    for array in server.params.values():
        np.testing.assert_allclose(array, 0.75)


def test_fixed_mode_broadcasts_num_chunks_means(blobs) -> None:
    # Prepare
    server = _server(blobs, average_dataset="fixed", num_chunks=2)
    replies = {0: _reply(server, 0.0, 10.0, means=3), 1: _reply(server, 1.0, 30.0, means=4)}
    scripted = ScriptedRound(1, replies)
    # Execute
    server.run_round(scripted)  # type: ignore[arg-type]
    # Assert
    assert server.average["avg_x"].shape == (2, 2)
    assert server.average["avg_y"].shape == (2, 3)
    np.testing.assert_allclose(server.average["avg_y"].sum(axis=1), 1.0, rtol=1e-6)


def test_the_cache_keeps_every_clients_latest_means_so_a_client_not_sampled_last_round_contributes(blobs) -> None:
    # Prepare: round 1 clients 0 (2 means of class 0) and 2 (3 means of class 1); round 2 client 1 (1 mean of class 2)
    server = _server(blobs)
    server.run_round(ScriptedRound(1, {0: _reply(server, 0.0, 10.0, means=2), 2: _reply(server, 1.0, 30.0, means=3)}))
    server.run_round(ScriptedRound(2, {1: _reply(server, 2.0, 5.0, means=1)}))  # type: ignore[arg-type]
    after_two = server.average
    # Execute: round 3, client 0 again, now with 1 mean of class 2 replacing its 2 older ones
    server.run_round(ScriptedRound(3, {0: _reply(server, 5.0, 10.0, means=1)}))  # type: ignore[arg-type]
    # Assert: B = 3 (the most means of one client) unweighted means of 2 cached means each, over all 3 clients
    assert after_two["avg_x"].shape == (3, 2)
    np.testing.assert_allclose(after_two["avg_y"].mean(axis=0), [2 / 6, 3 / 6, 1 / 6], atol=1e-6)
    np.testing.assert_allclose(after_two["avg_x"].mean(), (0.0 * 2 + 1.0 * 3 + 2.0 * 1) / 6, atol=1e-6)
    assert sorted(server.cache) == [0, 1, 2]
    assert len(server.cache[0]["chunk_x"]) == 1
    assert server.average["avg_x"].shape == (3, 2)
    assert (server.average["avg_y"][:, 0] == 0).all(), "client 0's class-0 means were replaced"


def test_state_dict_holds_the_average_dataset_and_restores_it(blobs) -> None:
    # Prepare
    server = _server(blobs)
    server.run_round(ScriptedRound(1, {0: _reply(server, 1.0, 10.0, means=2)}))  # type: ignore[arg-type]
    state = server.state_dict()
    restored = FedCFAServer(_factory, blobs(10, 0), FedCFAParams())
    # Execute
    restored.load_state_dict(state)
    scripted = ScriptedRound(2, {0: _reply(restored, 1.0, 10.0, means=2)})
    restored.run_round(scripted)  # type: ignore[arg-type]
    # Assert
    assert {"avg_x", "avg_y", "cache/0/chunk_x", "cache/0/chunk_y"} <= set(state.arrays)
    assert set(restored.params) == set(server.params)
    np.testing.assert_array_equal(scripted.sent[0].arrays["avg_x"], server.average["avg_x"])


def test_initialize_starts_without_an_average_dataset(blobs) -> None:
    # Prepare
    server = _server(blobs)
    server.run_round(ScriptedRound(1, {0: _reply(server, 1.0, 10.0, means=2)}))  # type: ignore[arg-type]
    # Execute
    server.initialize(seed=0)
    # Assert
    assert server.average == {}
    assert set(server.state_dict().arrays) == set(server.params)
