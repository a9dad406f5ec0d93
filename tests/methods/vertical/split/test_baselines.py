"""Specification of the split-network baselines: rows, masks, zero-filling, LASER-VFL's subsets."""

import itertools
import math

import numpy as np
import pytest
import torch

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
from fedmosaic.federation import ClientContext, ClientState, Federation, Message, Schedule
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.networks import mlp
from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec
from fedmosaic.methods.vertical.split.baselines import (
    Concatenation,
    LaserVFL,
    Local,
    accuracy,
    fully_aligned_labeled_rows,
    laser_weight,
    probabilities,
    sample_subsets,
)
from fedmosaic.methods.vertical.split.build import build_laser, build_local, build_plug, build_vanilla
from fedmosaic.methods.vertical.split.client import SplitClient
from fedmosaic.methods.vertical.split.params import LaserVFLParams, PlugVFLParams, SplitVFLParams
from fedmosaic.methods.vertical.task import VerticalTask

from ..conftest import tiny_vertical_data, train, with_shuffled_test_labels
from ..recording import RecordingGrid

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
    assert subsets[:, 1].all()
    assert (subsets.sum(1) == 3).all()
    assert not subsets[:, 2].any()
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


def test_vanilla_trains_on_fully_aligned_labeled_rows_plug_and_laser_on_every_labeled_row(
    tiny_data: VerticalData,
) -> None:
    rows = fully_aligned_labeled_rows(tiny_data.train)
    assert len(rows) > 0
    assert tiny_data.train.present[rows].all()
    assert (tiny_data.train.y[rows] >= 0).all()
    assert set(rows) < set(tiny_data.train.labeled)
    np.testing.assert_array_equal(Concatenation().train_rows(tiny_data.train), rows)
    np.testing.assert_array_equal(
        Concatenation(aligned_only=False).train_rows(tiny_data.train), tiny_data.train.labeled
    )
    np.testing.assert_array_equal(LaserVFL().train_rows(tiny_data.train), tiny_data.train.labeled)


def test_plug_dropout_zeroes_passive_embeddings_only() -> None:
    # Prepare: a head that records its input
    seen = []

    def head(flat: torch.Tensor) -> torch.Tensor:
        seen.append(flat)
        return torch.zeros(len(flat), 2, requires_grad=True)

    embeddings = torch.ones(500, 3, 2)

    # Execute
    Concatenation(dropout=0.5).loss(
        head,
        embeddings,
        torch.ones(500, 3, dtype=torch.bool),
        torch.zeros(500, dtype=torch.long),
        torch.Generator().manual_seed(0),
    )  # type: ignore[arg-type]

    # Assert
    kept = seen[0].reshape(500, 3, 2)[..., 0]
    assert (kept[:, 0] == 1).all()
    assert 0.4 < kept[:, 1:].mean() < 0.6


def test_vanilla_zero_fills_the_blocks_a_party_does_not_hold(tiny_data: VerticalData) -> None:
    # Prepare
    client = SplitClient(1, tiny_data.splits, lambda: mlp(2, 8, 4), OptimizerSpec("adam", 1e-3))
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

    def head(e: torch.Tensor) -> torch.Tensor:
        return torch.tensor([[0.0, 5.0]] * len(e))

    # Execute
    votes = Local().votes(head, torch.zeros(3, 2, 4), present, fallback=0)  # type: ignore[arg-type]

    # Assert
    assert accuracy(votes, torch.tensor([1, 0, 0])) == 1.0
    expected = torch.cat([torch.softmax(torch.tensor([[0.0, 5.0]]), -1), torch.tensor([[1.0, 0.0]] * 2)])
    np.testing.assert_array_equal(probabilities(votes).numpy(), expected.numpy())


def test_local_trains_only_on_the_labeled_rows_the_active_party_holds() -> None:
    # Prepare: labels among all rows (vertical.label_rows = "all"): rows 1 and 3 lack the active party
    blocks = [np.array([[0.0], [np.nan], [1.0], [np.nan]], np.float32), np.ones((4, 1), np.float32)]
    present = np.array([[True, True], [False, True], [True, True], [False, True]])
    split = VerticalSplit(blocks, present, np.array([0, 1, 1, -1]))

    # Execute
    rows = Local().train_rows(split)

    # Assert
    assert rows.tolist() == [0, 2]
    assert Concatenation(aligned_only=False).train_rows(split).tolist() == [0, 1, 2]


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
    votes = LaserVFL().votes(heads, torch.ones(2, 2, 3), present, fallback=0)

    # Assert: row 0: one of two heads right; row 1: its only head right
    assert accuracy(votes, torch.tensor([0, 0])) == pytest.approx((0.5 + 1.0) / 2)
    one_hot = torch.softmax(torch.eye(2), -1)
    np.testing.assert_allclose(probabilities(votes).numpy(), torch.stack([one_hot.mean(0), one_hot[0]]).numpy())


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
    for _, _, message in grid.transfers:
        assert set(message.arrays) <= {"rows", "grad.embedding", "embedding"}
        for name, array in message.arrays.items():
            if name != "rows":
                assert not np.isin(array, raw).any()


@pytest.mark.parametrize(
    "missingness",
    [Missingness("mcar", 0.5), Missingness("mar", 2), Missingness("mnar", 0.9), Missingness("keep", 1)],
    ids=["mcar5", "mar2", "mnar9", "keep1"],
)
def test_plug_trains_on_every_labeled_row_in_every_training_setting(missingness: Missingness) -> None:
    # Prepare
    data = tiny_vertical_data(missingness=missingness)
    labeled = data.train.labeled

    # Execute
    plug, _, _ = train(data, build_plug, params_of(build_plug), rounds=1)
    vanilla, _, _ = train(data, build_vanilla, params_of(build_vanilla), rounds=1)

    # Assert: PlugVFL steps over all labeled rows (batches of 8), Vanilla VFL over the fully aligned ones only
    assert plug.artifacts()["training_rows"] == len(labeled) > 0
    assert plug.artifacts()["optimizer_steps"] == math.ceil(len(labeled) / 8)
    assert vanilla.artifacts()["training_rows"] == len(fully_aligned_labeled_rows(data.train))
    if missingness.mechanism == "keep":
        assert vanilla.artifacts()["training_rows"] == vanilla.artifacts()["optimizer_steps"] == 0


def test_plug_sees_absent_passive_parties_as_zero_embeddings() -> None:
    # Prepare: a head that records its input; party 2 absent from the second row
    seen = []

    def head(flat: torch.Tensor) -> torch.Tensor:
        seen.append(flat)
        return torch.zeros(len(flat), 2, requires_grad=True)

    present = torch.tensor([[True, True, True], [True, True, False]])
    embeddings = torch.ones(2, 3, 2) * present[..., None]

    # Execute
    Concatenation(dropout=0.0, aligned_only=False).loss(
        head, embeddings, present, torch.zeros(2, dtype=torch.long), torch.Generator()
    )  # type: ignore[arg-type]

    # Assert
    assert seen[0].tolist() == [[1.0] * 6, [1.0] * 4 + [0.0] * 2]


@pytest.mark.parametrize("build", [build_local, build_vanilla, build_plug, build_laser, build_fedhssl])
def test_every_baseline_records_its_validation_split_selected_round_and_steps(
    validated_data: VerticalData, build
) -> None:  # type: ignore[no-untyped-def]
    # Prepare
    pretrain = 2 if build is build_fedhssl else 0
    params = (
        FedHSSLParams(**PARAMS.model_dump(), pretrain_rounds=2)
        if build is build_fedhssl
        else params_of(build, passes=2)
    )

    # Execute
    server, records, _ = train(validated_data, build, params, rounds=pretrain + 4)

    # Assert: the selected round is the first with the best validation accuracy
    artifacts = server.artifacts()
    validated = {r.round: r.metrics["validation_accuracy"] for r in records if "validation_accuracy" in r.metrics}
    assert artifacts["validation_rows"] == len(validated_data.validation) == 5
    assert sorted(validated) == list(range(pretrain + 1, pretrain + 5))
    assert artifacts["selected_round"] == max(validated, key=lambda r: (validated[r], -r))
    assert artifacts["validation_accuracy"] == max(validated.values())
    batches = math.ceil(artifacts["training_rows"] / 8)
    assert artifacts["optimizer_steps"] == 4 * params.passes * batches


@pytest.mark.parametrize("build", [build_plug, build_laser])
def test_baselines_are_selected_on_validation_never_on_test_rows(validated_data: VerticalData, build) -> None:  # type: ignore[no-untyped-def]
    # Prepare
    params = params_of(build)

    # Execute
    server, records, _ = train(validated_data, build, params, rounds=5)
    shuffled, shuffled_records, _ = train(with_shuffled_test_labels(validated_data), build, params, rounds=5)
    selected = server.artifacts()["selected_round"]
    _stopped_there, prefix, _ = train(validated_data, build, params, rounds=selected)

    # Assert: test labels change nothing in the selection; the tested model is the selected round's
    assert [r.metrics["validation_accuracy"] for r in records] == [
        r.metrics["validation_accuracy"] for r in shuffled_records
    ]
    assert shuffled.artifacts()["selected_round"] == selected
    assert records[-1].metrics["accuracy"] == prefix[-1].metrics["accuracy"]


def test_training_stops_after_patience_rounds_without_a_better_validation_accuracy(
    validated_data: VerticalData,
) -> None:
    # Prepare: a learning rate too small to change any prediction
    params = params_of(build_laser, patience=2, lr=1e-12)

    # Execute
    server, records, _grid = train(validated_data, build_laser, params, rounds=6)

    # Assert: rounds 2 and 3 do not beat round 1, so rounds 4 to 6 neither train nor validate
    artifacts = server.artifacts()
    assert artifacts["selected_round"] == 1
    assert artifacts["stopped_early"]
    assert artifacts["optimizer_steps"] == 3 * math.ceil(artifacts["training_rows"] / 8)
    assert [("validation_accuracy" in r.metrics) for r in records] == [True] * 3 + [False] * 3
    assert all(0.0 <= r.metrics["accuracy"] <= 1.0 for r in records)


def test_batch_shared_masks_give_rows_with_the_same_parties_the_same_uniform_subset() -> None:
    # Prepare: two rows with the same present parties, one with others
    present = torch.tensor(
        [[True, True, False, True, True], [True, True, False, True, True], [True, True, True, False, False]]
    )
    generator = torch.Generator().manual_seed(0)

    # Execute
    draws = torch.stack([sample_subsets(present, 1, 2, generator, shared=True) for _ in range(3000)])

    # Assert
    assert torch.equal(draws[:, 0], draws[:, 1])
    torch.testing.assert_close(draws[:, 0, [0, 3, 4]].float().mean(0), torch.full((3,), 1 / 3), atol=0.03, rtol=0)
    torch.testing.assert_close(draws[:, 2, [0, 2]].float().mean(0), torch.full((2,), 1 / 2), atol=0.03, rtol=0)
