"""Specification of the split-network baselines: rows, masks, zero-filling, LASER-VFL's subsets."""

import itertools

import numpy as np
import pytest
import torch

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.federation import ClientContext, ClientState, Federation, Message, Schedule
from fedmosaic.methods.vertical.baselines import (
    Concatenation,
    LaserVFL,
    Local,
    fully_aligned_labeled_rows,
    laser_weight,
    sample_subsets,
)
from fedmosaic.methods.vertical.build import build_fedhssl, build_laser, build_local, build_plug, build_vanilla
from fedmosaic.methods.vertical.networks import mlp
from fedmosaic.methods.vertical.params import FedHSSLParams, LaserVFLParams, PlugVFLParams, SplitVFLParams
from fedmosaic.methods.vertical.split_client import SplitClient
from fedmosaic.methods.vertical.task import VerticalTask

from .recording import RecordingGrid

PARAMS = SplitVFLParams(hidden=8, embedding=4, batch_size=8)
PARAMS_OF = {build_plug: PlugVFLParams, build_laser: LaserVFLParams}


def params_of(build, **changes):  # type: ignore[no-untyped-def]
    """``PARAMS`` as the parameters of ``build``'s method, with ``changes``."""
    return PARAMS_OF.get(build, SplitVFLParams)(**(PARAMS.model_dump() | changes))


def test_laser_weights_count_the_subsets_of_each_size_containing_a_party() -> None:
    # |O| = 4: subsets of size s containing a given party: C(3, s - 1), each weighted 1/s
    assert laser_weight(torch.tensor([4, 4, 4, 4]), 1).tolist() == [1.0] * 4
    assert laser_weight(torch.tensor([4]), 2).tolist() == [1.5]
    assert laser_weight(torch.tensor([4]), 3).tolist() == [1.0]
    assert laser_weight(torch.tensor([4]), 4).tolist() == [0.25]


def test_sampled_subsets_hold_the_party_have_the_size_and_stay_within_the_present_parties() -> None:
    # Prepare
    present = torch.tensor([[True, True, False, True, True]] * 3000)
    generator = torch.Generator().manual_seed(0)

    # Execute
    subsets = sample_subsets(present, 1, 3, generator)

    # Assert: the two other members are a uniform pair of {0, 3, 4}
    assert subsets[:, 1].all() and (subsets.sum(1) == 3).all() and not subsets[:, 2].any()
    frequencies = subsets[:, [0, 3, 4]].float().mean(0)
    torch.testing.assert_close(frequencies, torch.full((3,), 2 / 3), atol=0.03, rtol=0)


def test_the_weighted_sampled_subsets_are_unbiased_for_the_sum_over_all_subsets() -> None:
    # Prepare: a loss value for every (party, subset) of four present parties
    parties = 4
    present = torch.ones(20_000, parties, dtype=torch.bool)
    rng = np.random.default_rng(0)
    value = {(k, s): rng.random() for s in itertools.product([0, 1], repeat=parties) for k in range(parties)}
    exact = sum(
        value[(k, tuple(int(j in subset) for j in range(parties)))] / len(subset)
        for size in range(1, parties + 1)
        for subset in itertools.combinations(range(parties), size)
        for k in subset
    )
    generator = torch.Generator().manual_seed(1)

    # Execute
    estimate = 0.0
    for k in range(parties):
        for size in range(1, parties + 1):
            subsets = sample_subsets(present, k, size, generator).int().tolist()
            weight = laser_weight(torch.tensor([parties]), size).item()
            estimate += weight * np.mean([value[(k, tuple(s))] for s in subsets])

    # Assert
    assert estimate == pytest.approx(exact, rel=0.01)


def test_vanilla_and_plug_train_on_fully_aligned_labeled_rows_only(tiny_data: VerticalData) -> None:
    rows = fully_aligned_labeled_rows(tiny_data.train)
    assert len(rows) > 0
    assert tiny_data.train.present[rows].all() and (tiny_data.train.y[rows] >= 0).all()
    assert set(rows) < set(tiny_data.train.labeled)
    np.testing.assert_array_equal(Concatenation().train_rows(tiny_data.train), rows)
    np.testing.assert_array_equal(LaserVFL().train_rows(tiny_data.train), tiny_data.train.labeled)


def test_plug_dropout_zeroes_passive_embeddings_only() -> None:
    # Prepare: a head that records its input
    seen = []
    head = lambda flat: seen.append(flat) or torch.zeros(len(flat), 2, requires_grad=True)  # noqa: E731
    embeddings = torch.ones(500, 3, 2)

    # Execute
    Concatenation(dropout=0.5).loss(head, embeddings, torch.ones(500, 3, dtype=torch.bool), torch.zeros(500, dtype=torch.long), torch.Generator().manual_seed(0))  # type: ignore[arg-type]

    # Assert
    kept = seen[0].reshape(500, 3, 2)[..., 0]
    assert (kept[:, 0] == 1).all()
    assert 0.4 < kept[:, 1:].mean() < 0.6


def test_vanilla_zero_fills_the_blocks_a_party_does_not_hold(tiny_data: VerticalData) -> None:
    # Prepare
    client = SplitClient(1, tiny_data.splits, lambda: mlp(2, 8, 4), 1e-3)
    rows = np.arange(len(tiny_data.tests["MCAR 3"]))
    absent = ~tiny_data.tests["MCAR 3"].present[:, 1]
    message = Message(arrays={"rows": rows}, config={"action": "embed", "split": "MCAR 3", "zero_fill": True})

    # Execute
    state = ClientState()
    reply = client.handle(message, state, ClientContext(0, 1, 5))
    model, _ = client.load(state, 5)

    # Assert
    assert absent.any()
    assert reply.arrays["embedding"].shape == (len(rows), 4)
    with torch.no_grad():
        expected = model(torch.zeros(1, 2)).numpy()
    np.testing.assert_allclose(reply.arrays["embedding"][absent], np.repeat(expected, absent.sum(), 0), rtol=1e-6)


def test_local_predicts_the_majority_class_where_the_active_party_is_absent() -> None:
    # Prepare
    present = torch.tensor([[True, True], [False, True], [False, True]])
    head = lambda e: torch.tensor([[0.0, 5.0]] * len(e))  # noqa: E731

    # Execute
    accuracy = Local().accuracy(head, torch.zeros(3, 2, 4), present, torch.tensor([1, 0, 0]), fallback=0)  # type: ignore[arg-type]

    # Assert
    assert accuracy == 1.0


def test_laser_accuracy_averages_over_the_present_heads() -> None:
    # Prepare: party 0's head says class 0, party 1's says class 1
    class Head(torch.nn.Module):
        def __init__(self, answer: int) -> None:
            super().__init__()
            self.answer = answer

        def forward(self, e: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.one_hot(torch.full((len(e),), self.answer), 2).float()

    heads = torch.nn.ModuleList([Head(0), Head(1)])
    present = torch.tensor([[True, True], [True, False]])

    # Execute
    accuracy = LaserVFL().accuracy(heads, torch.ones(2, 2, 3), present, torch.tensor([0, 0]), fallback=0)

    # Assert: row 0: one of two heads right; row 1: its only head right
    assert accuracy == pytest.approx((0.5 + 1.0) / 2)


@pytest.mark.parametrize("build", [build_local, build_vanilla, build_plug, build_laser])
def test_every_baseline_trains_and_evaluates_without_raw_features_leaving(tiny_data: VerticalData, build) -> None:  # type: ignore[no-untyped-def]
    # Prepare
    raw = np.concatenate([b[~np.isnan(b)] for split in tiny_data.splits.values() for b in split.blocks[1:]])
    server, factory = build(VerticalTask(tiny_data, 3), params_of(build))
    grid = RecordingGrid(factory, 0)
    records = []

    # Execute
    Federation(server, grid, Schedule(num_clients=2), seed=0, rounds=3).run(on_round=records.append)

    # Assert
    assert 0.0 <= records[-1].metrics["accuracy"] <= 1.0
    assert (len(grid.transfers) == 0) == (build is build_local)
    for direction, _, message in grid.transfers:
        assert set(message.arrays) <= {"rows", "grad.embedding", "embedding"}
        for name, array in message.arrays.items():
            if name != "rows":
                assert not np.isin(array, raw).any()


@pytest.mark.parametrize(
    ("build", "params"),
    [(build_laser, params_of(build_laser)), (build_fedhssl, FedHSSLParams(**PARAMS.model_dump(), pretrain_rounds=2))],
    ids=["laser", "fedhssl"],
)
def test_a_resumed_run_ends_exactly_like_an_uninterrupted_one(tiny_data: VerticalData, tmp_path, build, params) -> None:  # type: ignore[no-untyped-def]
    # FedHSSL resumes at the switch from pre-training to fine-tuning
    def federation(rounds: int) -> Federation:
        server, factory = build(VerticalTask(tiny_data, 4), params)
        return Federation(server, RecordingGrid(factory, 0), Schedule(num_clients=2), seed=0, rounds=rounds, checkpoint=tmp_path / "c.npz")

    whole = [r.metrics for r in federation(4).run()]
    federation(2).run()
    resumed = [r.metrics for r in federation(4).run(resume=True)]
    assert resumed == whole
