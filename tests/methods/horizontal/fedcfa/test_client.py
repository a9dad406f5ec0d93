"""The FedCFA client: plain training in round 1, counterfactual training after, only means leave."""

import numpy as np
import pytest
import torch

from fedmosaic.federation import ClientContext, ClientState, Message, derive_rng
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedcfa.average_dataset import chunk_indices
from fedmosaic.methods.horizontal.fedcfa.client import FedCFAClient
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import train_epochs

TRAIN = TrainParams(epochs=2, batch_size=8, lr=0.1)
SPLIT = 3
CONTEXT = ClientContext(client_id=0, round=2, seed=11)


def _factory():
    return build_model(ModelParams(hidden=[8]), (2,), 3)


def _global() -> dict[str, np.ndarray]:
    return model_to_arrays(seeded(0, _factory))


def _average() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {
        "avg_x": rng.standard_normal((5, 2)).astype(np.float32),
        "avg_y": rng.dirichlet(np.ones(3), size=5).astype(np.float32),
    }


def _reply(data, params, arrays, context=CONTEXT) -> Message:
    client = FedCFAClient(_factory, data, TRAIN, params, SPLIT)
    return client.handle(Message(arrays=arrays).read_only(), ClientState(), context)


def test_without_an_average_dataset_the_client_trains_exactly_like_fedavg(blobs, params) -> None:
    # Prepare
    data = blobs(40, 1)
    start = _global()
    # Execute
    reply = _reply(data, params, start)
    plain = FedAvgClient(_factory, data, TRAIN).handle(Message(arrays=start), ClientState(), CONTEXT)
    # Assert
    for name in start:
        np.testing.assert_array_equal(reply.arrays[name], plain.arrays[name])
    assert reply.metrics == plain.metrics


def test_with_an_average_dataset_the_client_trains_differently_and_deterministically(blobs, params) -> None:
    # Prepare
    data = blobs(40, 1)
    start = _global()
    # Execute
    plain = _reply(data, params, start)
    first = _reply(data, params, {**start, **_average()})
    second = _reply(data, params, {**start, **_average()})
    other_seed = _reply(data, params, {**start, **_average()}, ClientContext(0, 2, seed=12))
    # Assert
    assert any(not np.array_equal(first.arrays[k], plain.arrays[k]) for k in start)
    assert all(np.array_equal(first.arrays[k], second.arrays[k]) for k in first.arrays)
    assert any(not np.array_equal(first.arrays[k], other_seed.arrays[k]) for k in start)


@pytest.mark.parametrize("with_average", [False, True])
def test_only_the_model_and_chunk_means_leave_the_client(blobs, params, with_average: bool) -> None:
    # Prepare: 40 samples, chunks of 16 -> 2 chunk means; the last 8 samples are dropped
    data = blobs(40, 1)
    start = _global()
    # Execute
    reply = _reply(data, params, {**start, **(_average() if with_average else {})})
    # Assert
    assert set(reply.arrays) == set(start) | {"chunk_x", "chunk_y"}
    assert all(a.shape[:1] != (40,) for a in reply.arrays.values())
    assert reply.arrays["chunk_x"].shape == (40 // 16, 2)
    assert reply.arrays["chunk_y"].shape == (40 // 16, 3)
    assert set(reply.metrics) == {"num_examples", "train_loss"}


def test_chunk_means_are_means_of_the_clients_shuffled_data(blobs, params) -> None:
    # Prepare
    data = blobs(40, 1)
    chunks = chunk_indices(40, derive_rng(CONTEXT.seed, "chunks"), chunk_size=16)
    # Execute
    reply = _reply(data, params, _global())
    # Assert
    for row, chunk in enumerate(chunks):
        np.testing.assert_allclose(reply.arrays["chunk_x"][row], data.x[chunk].mean(axis=0), rtol=1e-6)
        np.testing.assert_allclose(reply.arrays["chunk_y"][row], np.bincount(data.y[chunk], minlength=3) / 16)


def test_with_the_remainder_kept_the_last_smaller_chunk_is_uploaded_too(blobs, params) -> None:
    # Prepare: 40 samples in chunks of 16 -> 16, 16 and the remaining 8
    data = blobs(40, 1)
    kept = params.model_copy(update={"chunk_remainder": "kept"})
    chunks = chunk_indices(40, derive_rng(CONTEXT.seed, "chunks"), chunk_size=16, keep_remainder=True)
    # Execute
    reply = _reply(data, kept, _global())
    # Assert
    assert [len(c) for c in chunks] == [16, 16, 8]
    assert sorted(np.concatenate(chunks).tolist()) == list(range(40))
    np.testing.assert_allclose(reply.arrays["chunk_x"][2], data.x[chunks[2]].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(reply.arrays["chunk_y"][2], np.bincount(data.y[chunks[2]], minlength=3) / 8)


def test_the_carried_sgd_keeps_its_momentum_in_the_client_state_from_one_round_to_the_next(blobs, params) -> None:
    # Prepare: two rounds of plain training from the same start; the reference's one SGD kept across them
    data = blobs(40, 1)
    carried = params.model_copy(update={"client_optimizer": "carried-sgd"})
    client = FedCFAClient(_factory, data, TRAIN, carried, SPLIT)
    state = ClientState()
    contexts = [ClientContext(0, 1, seed=5), ClientContext(0, 2, seed=6)]
    model = _factory()
    sgd = torch.optim.SGD(model.parameters(), lr=TRAIN.lr, momentum=0.9, weight_decay=5e-4)
    # Execute
    replies = [client.handle(Message(arrays=_global()).read_only(), state, context) for context in contexts]
    for context in contexts:
        load_arrays(model, _global())
        train_epochs(
            model,
            torch.from_numpy(data.x),
            torch.from_numpy(data.y),
            params=TRAIN,
            generator=torch.Generator().manual_seed(context.seed),
            optimizer=sgd,
        )
    # Assert: round 2 continues round 1's momentum, and the state holds the buffers a new SGD resumes from
    for name, expected in model_to_arrays(model).items():
        np.testing.assert_allclose(replies[1].arrays[name], expected, rtol=1e-6, atol=1e-7)
    assert set(state.arrays) == {f"momentum/{name}" for name, _ in model.named_parameters()}
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(state.arrays[f"momentum/{name}"], sgd.state[parameter]["momentum_buffer"].numpy())
    fresh = _reply(data, params, _global(), contexts[1])
    assert any(
        not np.array_equal(fresh.arrays[k], replies[1].arrays[k]) for k in fresh.arrays if k in model_to_arrays(model)
    )
