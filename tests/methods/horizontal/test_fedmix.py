"""FedMix and NaiveMix: losses against their formulas, mean sharing, federation runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pydantic
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.experiments.reference import key_table
from fedmosaic.federation import (
    ClientContext,
    ClientState,
    Federation,
    Grid,
    InProcessGrid,
    Message,
    Schedule,
)
from fedmosaic.federation.robust import Median
from fedmosaic.methods.arrays import model_to_arrays, seeded
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedmix.build import build_fedmix
from fedmosaic.methods.horizontal.fedmix.client import FedMixClient, local_means
from fedmosaic.methods.horizontal.fedmix.losses import fedmix_loss, naivemix_loss
from fedmosaic.methods.horizontal.fedmix.params import FedMixParams, NaiveMixParams
from fedmosaic.methods.horizontal.fedmix.server import FedMixServer, MeanRelay
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.train_params import TrainParams

SHAPE = (2, 2)
CLASSES = 3
TRAIN = TrainParams(epochs=1, batch_size=8, lr=0.1)


def _blobs(n: int, seed: int, classes: list[int] | None = None) -> ArrayDataset:
    rng = np.random.default_rng(seed)
    y = rng.choice(classes if classes is not None else range(CLASSES), size=n)
    centres = np.array([[2.0, 0.0, 0.0, 1.0], [-2.0, 0.0, 1.0, 0.0], [0.0, 2.0, -1.0, 0.0]])
    x = (centres[y] + 0.5 * rng.standard_normal((n, 4))).reshape(n, *SHAPE).astype(np.float32)
    return ArrayDataset(x, y.astype(np.int64), num_classes=CLASSES)


def _factory() -> nn.Module:
    return build_model(ModelParams(hidden=[8]), SHAPE, CLASSES)


def _linear() -> nn.Module:
    return seeded(0, lambda: nn.Sequential(nn.Flatten(), nn.Linear(4, CLASSES)))


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(5, *SHAPE, generator=generator)
    y = torch.tensor([0, 1, 2, 1, 0])
    mean_x = torch.randn(5, *SHAPE, generator=generator)
    mean_y = torch.softmax(torch.randn(5, CLASSES, generator=generator), dim=1)
    return x, y, mean_x, mean_y


def _task(clients: list[ArrayDataset]) -> HorizontalTask:
    return HorizontalTask(clients=clients, test=_blobs(60, seed=9), model=ModelParams(hidden=[8]), train=TRAIN)


def _clients() -> list[ArrayDataset]:
    return [_blobs(24, seed=k, classes=[k, (k + 1) % CLASSES]) for k in range(3)]


# --- losses -----------------------------------------------------------------


def test_naivemix_loss_matches_its_formula() -> None:
    # Prepare
    model, (x, y, mean_x, mean_y), lam = _linear(), _batch(), 0.1
    weight, bias = model[1].weight, model[1].bias
    # Execute
    loss = naivemix_loss(model, x, y, mean_x, mean_y, lam)
    # Assert: log-softmax of the mixed input, written out.
    mixed = ((1 - lam) * x + lam * mean_x).flatten(1)
    log_p = torch.log_softmax(mixed @ weight.T + bias, dim=1)
    own = -log_p[torch.arange(5), y]
    soft = -(mean_y * log_p).sum(dim=1)
    expected = ((1 - lam) * own + lam * soft).mean()
    torch.testing.assert_close(loss, expected)


def test_fedmix_loss_and_its_parameter_gradient_match_the_closed_form() -> None:
    # Prepare: for f(s) = W s + b, d CE(f(s), y) / d s = W^T (softmax(f(s)) - onehot(y)),
    # so the formula needs no autograd through the input.
    model, (x, y, mean_x, mean_y), lam = _linear(), _batch(), 0.05
    weight, bias = model[1].weight, model[1].bias
    scaled = ((1 - lam) * x).flatten(1)
    logits = scaled @ weight.T + bias
    log_p = torch.log_softmax(logits, dim=1)
    own = -log_p[torch.arange(5), y]
    soft = -(mean_y * log_p).sum(dim=1)
    input_grad = (torch.softmax(logits, dim=1) - F.one_hot(y, CLASSES)) @ weight
    taylor = (input_grad * mean_x.flatten(1)).sum(dim=1)
    expected = ((1 - lam) * own + lam * soft + lam * (1 - lam) * taylor).mean()
    expected_grad = torch.autograd.grad(expected, weight, retain_graph=True)[0]
    without_taylor = torch.autograd.grad(((1 - lam) * own + lam * soft).mean(), weight)[0]
    # Execute
    loss = fedmix_loss(model, x, y, mean_x, mean_y, lam)
    (grad,) = torch.autograd.grad(loss, weight)
    # Assert
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grad, expected_grad)
    assert not torch.allclose(grad, without_taylor), "the Taylor term must reach the parameters"


# --- means ------------------------------------------------------------------


def test_one_mean_of_the_whole_dataset_by_default() -> None:
    # Prepare
    data = _blobs(10, seed=0)
    # Execute
    mean_x, mean_y = local_means(data, None, np.random.default_rng(0))
    # Assert
    assert mean_x.shape == (1, *SHAPE)
    assert mean_y.shape == (1, CLASSES)
    np.testing.assert_allclose(mean_x[0], data.x.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(mean_y[0], np.bincount(data.y, minlength=CLASSES) / 10)


def test_mean_batch_gives_several_means_each_over_at_least_that_many_samples() -> None:
    # Prepare
    data = _blobs(11, seed=0)
    # Execute
    mean_x, mean_y = local_means(data, 3, np.random.default_rng(0))
    # Assert: 11 // 3 groups of sizes 4, 4, 3; size-weighted they give the overall mean.
    sizes = np.array([4, 4, 3])
    assert mean_x.shape == (3, *SHAPE)
    assert mean_y.shape == (3, CLASSES)
    np.testing.assert_allclose(np.tensordot(sizes, mean_x, axes=1) / 11, data.x.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(mean_y.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.rint(mean_y * sizes[:, None]).sum(axis=0), np.bincount(data.y, minlength=CLASSES))


# --- parameters -------------------------------------------------------------


def test_params_defaults_follow_the_paper_and_bad_values_are_rejected() -> None:
    # Execute / Assert
    assert (FedMixParams().variant, FedMixParams().lam, FedMixParams().mean_batch) == ("fedmix", 0.05, None)
    assert (NaiveMixParams().variant, NaiveMixParams().lam) == ("naivemix", 0.1)
    for bad in ({"lam": 0.0}, {"lam": 1.0}, {"mean_batch": 0}, {"variant": "mixup"}, {"alpha": 1.0}):
        with pytest.raises(pydantic.ValidationError):
            FedMixParams(**bad)


def test_every_parameter_is_documented_for_the_reference() -> None:
    # Execute
    tables = [key_table(FedMixParams), key_table(NaiveMixParams)]
    # Assert
    assert all("`lam` | float in (0, 1)" in table and "`mean_batch`" in table for table in tables)


# --- client -----------------------------------------------------------------


def test_a_client_shares_only_its_means_and_only_when_asked() -> None:
    # Prepare
    data = _blobs(24, seed=1)
    start = model_to_arrays(_factory())
    client = FedMixClient(_factory, data, TRAIN, FedMixParams())
    # Execute
    asked = client.handle(Message(arrays=start, config={"send_means": True}), ClientState(), ClientContext(1, 1, 5))
    not_asked = client.handle(
        Message(arrays=start, config={"send_means": False}), ClientState(), ClientContext(1, 2, 5)
    )
    # Assert
    assert set(asked.arrays) == set(start) | {"mean_x", "mean_y"}
    np.testing.assert_allclose(asked.arrays["mean_x"], data.x.mean(axis=0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(asked.arrays["mean_y"], np.bincount(data.y, minlength=CLASSES)[None] / 24)
    assert set(not_asked.arrays) == set(start)


def test_without_global_means_a_client_trains_exactly_like_fedavg() -> None:
    # Prepare
    data = _blobs(24, seed=1)
    start = model_to_arrays(_factory())
    context = ClientContext(0, 1, seed=7)
    means = {"global_x": np.ones((1, *SHAPE), np.float32), "global_y": np.full((1, CLASSES), 1 / 3, np.float32)}
    # Execute
    fedavg = FedAvgClient(_factory, data, TRAIN).handle(Message(arrays=start), ClientState(), context)
    plain = FedMixClient(_factory, data, TRAIN, FedMixParams()).handle(Message(arrays=start), ClientState(), context)
    mixed = FedMixClient(_factory, data, TRAIN, FedMixParams()).handle(
        Message(arrays={**start, **means}, config={"means_from": [1]}), ClientState(), context
    )
    # Assert
    assert all(np.array_equal(plain.arrays[k], fedavg.arrays[k]) for k in start)
    assert any(not np.array_equal(mixed.arrays[k], fedavg.arrays[k]) for k in start)


def test_received_means_are_kept_in_state_and_a_repeat_is_ignored() -> None:
    # Prepare: rows from clients 1 (two means) and 2, then a resend of 2 with new 3.
    client = FedMixClient(_factory, _blobs(24, seed=0), TRAIN, FedMixParams())
    start = model_to_arrays(_factory())
    state = ClientState()

    def message(sources: list[int]) -> Message:
        rows = np.array(sources, np.float32)
        means = {
            "global_x": np.broadcast_to(rows[:, None, None], (len(rows), *SHAPE)).copy(),
            "global_y": np.broadcast_to(rows[:, None], (len(rows), CLASSES)).copy(),
        }
        return Message(arrays={**start, **means}, config={"means_from": sources})

    # Execute
    client.handle(message([1, 1, 2]), state, ClientContext(0, 1, 1))
    client.handle(message([2, 3]), state, ClientContext(0, 2, 1))
    # Assert
    assert state.arrays["global_from"].tolist() == [1, 1, 2, 3]
    assert state.arrays["global_x"][:, 0, 0].tolist() == [1.0, 1.0, 2.0, 3.0]
    assert state.arrays["global_y"].shape == (4, CLASSES)


def test_the_relay_rejects_means_of_a_wrong_shape() -> None:
    # Prepare
    relay = MeanRelay()
    good = Message(arrays={"mean_x": np.zeros((1, *SHAPE), np.float32), "mean_y": np.ones((1, CLASSES), np.float32)})
    bad = Message(arrays={"mean_x": np.zeros((1, 4), np.float32), "mean_y": np.ones((1, CLASSES), np.float32)})
    relay.collect({0: good})
    # Execute / Assert
    with pytest.raises(ValueError, match=r"client 1: means of shapes \(1, 4\)"):
        relay.collect({1: bad})


# --- federation ---------------------------------------------------------------


class SpyGrid(Grid):
    """Records every delivered message and every reply of an in-process grid."""

    def __init__(self, inner: InProcessGrid) -> None:
        self.inner = inner
        self.sent: list[tuple[int, int, Message]] = []
        self.replies: list[tuple[int, int, Message]] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.sent += [(rnd, c, m) for c, m in messages.items()]
        replies = self.inner.send_and_receive(messages, rnd, failing)
        self.replies += [(rnd, c, r) for c, r in replies.items()]
        return replies


JOINING = Schedule(num_clients=3, joins={2: 3})  # client 2 joins in round 3


def _spied_run(params: FedMixParams, schedule: Schedule) -> tuple[SpyGrid, FedMixServer, list[str]]:
    server, factory = build_fedmix(_task(_clients()), params)
    assert isinstance(server, FedMixServer)
    spy = SpyGrid(InProcessGrid(factory, seed=0))
    history = Federation(server, spy, schedule, seed=0, rounds=5).run()
    return spy, server, [r.status for r in history]


def _sources_sent(spy: SpyGrid, client: int) -> dict[int, list[int]]:
    """The contributor of each mean row sent to ``client``, by round."""
    sent: dict[int, list[int]] = {}
    for rnd, receiver, message in spy.sent:
        sources = message.config.get("means_from", [])
        assert isinstance(sources, list)
        if receiver == client:
            sent[rnd] = [int(s) for s in sources]
    return sent


@pytest.mark.parametrize("params", [FedMixParams(mean_batch=10), NaiveMixParams()])
def test_only_model_and_means_leave_a_client_and_means_only_once(params: FedMixParams) -> None:
    # Execute
    spy, server, _ = _spied_run(params, JOINING)
    # Assert: 24 samples per client give 1 mean, or 2 with mean_batch 10.
    means_per_client = 1 if params.mean_batch is None else 2
    uploads: dict[int, list[int]] = {}
    for rnd, client, reply in spy.replies:
        extra = set(reply.arrays) - set(server.params)
        if extra:
            assert extra == {"mean_x", "mean_y"}
            uploads.setdefault(client, []).append(rnd)
            assert len(reply.arrays["mean_x"]) == len(reply.arrays["mean_y"]) == means_per_client
    assert uploads == {0: [1], 1: [1], 2: [3]}, "each client uploads its means once, in its first round"


@pytest.mark.parametrize("params", [FedMixParams(mean_batch=10), NaiveMixParams()])
def test_each_client_receives_every_other_clients_means_once_and_keeps_them(params: FedMixParams) -> None:
    # Execute
    spy, server, _ = _spied_run(params, JOINING)
    # Assert
    per_mean = 1 if params.mean_batch is None else 2
    assert _sources_sent(spy, 0) == {1: [], 2: [1] * per_mean, 3: [], 4: [2] * per_mean, 5: []}
    assert _sources_sent(spy, 2) == {3: [0] * per_mean + [1] * per_mean, 4: [], 5: []}
    for client, state in spy.inner.client_states().items():
        others = [s for s in server.relay.order if s != client]
        assert sorted(set(state.arrays["global_from"].tolist())) == sorted(others)
        for source in others:
            rows = state.arrays["global_x"][state.arrays["global_from"] == source]
            np.testing.assert_array_equal(rows, server.relay.means[source][0])


def test_means_are_resent_after_a_skipped_round_and_kept_once() -> None:
    # Prepare: every round needs all 3 replies; client 1's reply in round 2 is lost,
    # so round 2 is skipped after clients 0 and 2 stored the means sent to them.
    schedule = Schedule(num_clients=3, min_replies=3, failures={2: frozenset({1})})
    # Execute
    spy, _, statuses = _spied_run(NaiveMixParams(), schedule)
    # Assert
    assert statuses == ["ok", "skipped", "ok", "ok", "ok"]
    assert _sources_sent(spy, 0) == {1: [], 2: [1, 2], 3: [1, 2], 4: [], 5: []}
    assert spy.inner.client_states()[0].arrays["global_from"].tolist() == [1, 2]


def _run(
    params: FedMixParams, *, seed: int, rounds: int, checkpoint: Path | None = None, resume: bool = False
) -> tuple[FedMixServer, InProcessGrid, list[dict[str, float]]]:
    server, factory = build_fedmix(_task(_clients()), params)
    assert isinstance(server, FedMixServer)
    grid = InProcessGrid(factory, seed=seed)
    schedule = Schedule(num_clients=3, clients_per_round=2)
    history = Federation(
        server, grid, schedule, seed=seed, rounds=rounds, checkpoint=checkpoint, fingerprint="fedmix"
    ).run(resume=resume)
    return server, grid, [r.metrics for r in history]


def _assert_states_equal(a: Mapping[int, ClientState], b: Mapping[int, ClientState]) -> None:
    assert a.keys() == b.keys()
    for client in a:
        assert a[client].config == b[client].config
        assert a[client].arrays.keys() == b[client].arrays.keys()
        for name in a[client].arrays:
            np.testing.assert_array_equal(a[client].arrays[name], b[client].arrays[name])


@pytest.mark.parametrize("params", [FedMixParams(), NaiveMixParams()])
def test_a_three_client_federation_is_deterministic_and_learns(params: FedMixParams) -> None:
    # Execute
    a_server, a_grid, a_metrics = _run(params, seed=0, rounds=6)
    b_server, b_grid, b_metrics = _run(params, seed=0, rounds=6)
    c_server, _, _ = _run(params, seed=1, rounds=6)
    # Assert
    assert a_metrics == b_metrics
    assert all(np.array_equal(a_server.params[k], b_server.params[k]) for k in a_server.params)
    _assert_states_equal(a_grid.client_states(), b_grid.client_states())
    assert any(not np.array_equal(a_server.params[k], c_server.params[k]) for k in a_server.params)
    assert a_metrics[-1]["accuracy"] > 0.8


def test_the_federations_aggregation_rule_applies_to_fedmix() -> None:
    # Prepare: a federation combining with the median instead of the mean.
    server, factory = build_fedmix(_task(_clients()), NaiveMixParams())
    calls: list[int] = []

    class CountingMedian(Median):
        def aggregate(self, contributions, reference, rng):  # type: ignore[no-untyped-def]
            calls.append(len(contributions))
            return super().aggregate(contributions, reference, rng)

    federation = Federation(server, InProcessGrid(factory, seed=0), Schedule(num_clients=3), seed=0, rounds=2)
    federation.aggregator = CountingMedian()

    # Execute
    federation.run()

    # Assert
    assert calls == [3, 3]
