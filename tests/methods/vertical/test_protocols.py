"""The two baseline protocols, and the knobs of a reference configuration (fixed budget, SGD, linear heads)."""

import numpy as np
import pytest
import torch

from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
from fedmosaic.federation import Federation, Schedule
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.split.baselines import aligned_only, single_vote
from fedmosaic.methods.vertical.split.build import build_laser, build_plug, build_vanilla
from fedmosaic.methods.vertical.split.params import LaserVFLParams, PlugVFLParams, SplitVFLParams
from fedmosaic.methods.vertical.task import VerticalTask

from .recording import RecordingGrid


def run(data: VerticalData, build, params, rounds: int, **protocol):  # type: ignore[no-untyped-def]
    """The server and round records of ``build``'s method under ``protocol`` (VerticalTask's fields)."""
    server, factory = build(VerticalTask(data, rounds, **protocol), params)
    records = Federation(
        server, RecordingGrid(factory, 0), Schedule(num_clients=data.num_parties - 1), seed=0, rounds=rounds
    ).run()
    return server, records


def test_aligned_only_gives_rows_not_every_party_holds_a_random_or_the_majority_class() -> None:
    # Prepare: every row's network vote is class 1; rows 1..3 miss a party
    votes = single_vote(torch.tensor([[0.0, 9.0, 0.0]]).repeat(400, 1))
    present = torch.ones(400, 2, dtype=torch.bool)
    present[1:, 1] = False

    # Execute
    majority = aligned_only(votes, present, "majority", 2, torch.Generator().manual_seed(0))
    random = aligned_only(votes, present, "random", 2, torch.Generator().manual_seed(0))
    again = aligned_only(votes, present, "random", 2, torch.Generator().manual_seed(0))

    # Assert
    assert majority.logits.argmax(-1)[:, 0].tolist() == [1] + [2] * 399
    drawn = random.logits.argmax(-1)[1:, 0]
    assert random.logits.argmax(-1)[0, 0] == 1
    assert sorted(set(drawn.tolist())) == [0, 1, 2]
    assert all(abs(float((drawn == c).float().mean()) - 1 / 3) < 0.1 for c in range(3))
    torch.testing.assert_close(random.logits, again.logits)
    assert aligned_only(votes, present, "model", 2, torch.Generator()) is votes


def with_aligned_and_unaligned_tests(data: VerticalData) -> VerticalData:
    """``data`` tested on its test rows every party holds (``MCAR 0``), and on the same rows without party 2 (``KEEP 2``)."""
    (test,) = data.tests.values()
    rows = test.present.all(1)
    aligned = VerticalSplit([block[rows] for block in test.blocks], test.present[rows], test.y[rows])
    present = aligned.present.copy()
    present[:, 2] = False
    blocks = [*aligned.blocks[:2], np.full_like(aligned.blocks[2], np.nan)]
    tests = {"MCAR 0": aligned, "KEEP 2": VerticalSplit(blocks, present, aligned.y)}
    return VerticalData(data.train, tests, data.num_classes, data.likelihood, data.validation)


def test_the_paper_protocol_changes_only_the_predictions_of_rows_not_every_party_holds(tiny_data: VerticalData) -> None:
    # Prepare: the same budget (one epoch per round) under both protocols
    data = with_aligned_and_unaligned_tests(tiny_data)
    params = SplitVFLParams(passes=1)

    # Execute
    tuned, tuned_records = run(data, build_vanilla, params, 3)
    paper, paper_records = run(data, build_vanilla, params, 3, protocol="paper", unaligned_prediction="majority")

    # Assert: the same training and the same predictions of aligned rows; the others get the majority class
    assert tuned.artifacts()["optimizer_steps"] == paper.artifacts()["optimizer_steps"]
    assert paper_records[-1].metrics["accuracy_mcar0"] == tuned_records[-1].metrics["accuracy_mcar0"]
    majority = int(np.bincount(data.train.y[data.train.labeled]).argmax())
    y = data.tests["KEEP 2"].y
    assert paper_records[-1].metrics["accuracy_keep2"] == pytest.approx(float((y == majority).mean()))
    assert paper.exported_model().architecture["baseline"]["unaligned"] == "majority"


def test_the_paper_protocol_trains_plugvfl_without_party_dropout(tiny_data: VerticalData) -> None:
    tuned, _ = run(tiny_data, build_plug, PlugVFLParams(dropout=0.5), 1)
    paper, _ = run(tiny_data, build_plug, PlugVFLParams(dropout=0.5), 1, protocol="paper")
    assert tuned.exported_model().architecture["baseline"]["dropout"] == 0.5
    assert paper.exported_model().architecture["baseline"]["dropout"] == 0.0


@pytest.mark.parametrize(
    ("build", "params", "fine_tuning_rounds"),
    [(build_laser, LaserVFLParams(passes=3), 4), (build_fedhssl, FedHSSLParams(passes=3, pretrain_rounds=2), 2)],
)
def test_the_paper_protocol_makes_one_epoch_per_round_the_tuned_one_passes(  # type: ignore[no-untyped-def]
    tiny_data: VerticalData, build, params, fine_tuning_rounds: int
) -> None:
    # one batch per epoch (20 labeled rows at most)
    tuned, _ = run(tiny_data, build, params, 4)
    paper, _ = run(tiny_data, build, params, 4, protocol="paper")
    assert tuned.artifacts()["optimizer_steps"] == 3 * fine_tuning_rounds
    assert paper.artifacts()["optimizer_steps"] == fine_tuning_rounds


def test_a_fixed_budget_of_epochs_is_spread_over_the_rounds_and_tests_the_last_round(
    validated_data: VerticalData,
) -> None:
    # Prepare: a reference configuration: 10 epochs in 4 rounds, SGD, linear heads, the last round tested
    params = LaserVFLParams(
        epochs=10, test_round="last", optimizer="sgd", lr=0.02, momentum=0.7, weight_decay=1e-4, head_layers=0
    )

    # Execute
    server, records = run(validated_data, build_laser, params, 4, protocol="paper")

    # Assert
    artifacts = server.artifacts()
    assert artifacts["optimizer_steps"] == 10
    assert artifacts["validation_rows"] == 0
    assert artifacts["selected_round"] == 4
    assert all("validation_accuracy" not in record.metrics for record in records)
    exported = server.exported_model()
    assert exported.architecture["head_layers"] == 0
    heads = [name for name in exported.arrays if name.startswith("head.")]
    assert sorted({name.split(".")[2] for name in heads}) == ["0"]  # one Linear per head


def test_sgd_parties_keep_their_momentum_between_messages(tiny_data: VerticalData) -> None:
    # Prepare
    params = SplitVFLParams(optimizer="sgd", lr=0.02, momentum=0.7)
    server, factory = build_vanilla(VerticalTask(tiny_data, 2), params)
    grid = RecordingGrid(factory, 0)

    # Execute
    Federation(server, grid, Schedule(num_clients=tiny_data.num_parties - 1), seed=0, rounds=2).run()

    # Assert: the passive parties' states hold SGD's momentum buffers, not Adam's moments
    names = {name for state in grid.client_states().values() for name in state.arrays if name.startswith("opt.")}
    assert names
    assert all(name.endswith("momentum_buffer") for name in names)
