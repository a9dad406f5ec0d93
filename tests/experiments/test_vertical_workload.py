"""Vertical experiments: the [vertical] section, its checks, and the prepared data."""

from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.missingness import Missingness
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.vertical_workload import shared_mechanism
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.methods.vertical.task import VerticalTask

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
RUNS = [
    {"name": "FALSE-VFL", "method": "false-vfl", "params": {"stage1_rounds": 2}},
    {"name": "LASER", "method": "laser-vfl"},
]


def vertical(**section):  # type: ignore[no-untyped-def]
    return {"name": "v", "federation": {"rounds": 3}, "vertical": {"num_parties": 4, **section}, "runs": RUNS}


def test_a_vertical_section_makes_a_vertical_task_with_one_client_per_passive_party() -> None:
    config = load_config(vertical())
    assert config.task_kind == "vertical"
    assert config.num_clients == 3


def test_digits_are_cut_into_patches_with_bernoulli_pixels_and_a_budget_of_labels() -> None:
    # Prepare
    config = load_config(vertical(train_missing="mcar:0.5", test_missing="mar:1", label_budget=100))

    # Execute
    workload = prepare_workload(config)

    # Assert
    data = workload.data
    assert data.likelihood == "bernoulli"
    assert data.widths == [16, 16, 16, 16]
    # a fifth of the labels is held out for validation (rows still in the training split, unlabeled there)
    assert len(data.train.labeled) == 80
    assert data.train.present[data.train.labeled, 0].all()
    assert data.validation is not None
    assert len(data.validation) == 20
    assert (data.validation.y >= 0).all()
    ((label, test),) = data.tests.items()
    assert label == "MAR 1"
    assert test.present[:, 0].all()
    assert not test.present.all()
    (job,) = workload.jobs("federated", config)
    assert job.schedule.num_clients == 3
    assert job.schedule.min_replies == config.federation.min_replies


def test_the_same_seed_gives_the_same_masks_and_labels() -> None:
    first = prepare_workload(load_config(vertical(split="dirichlet", alpha=0.5))).data
    again = prepare_workload(load_config(vertical(split="dirichlet", alpha=0.5))).data
    np.testing.assert_array_equal(first.train.present, again.train.present)
    np.testing.assert_array_equal(first.train.y, again.train.y)


@pytest.mark.skipif(not (SHARED_DATA / "isolet").exists(), reason="ISOLET files are not available")
def test_isolet_is_standardised_and_split_evenly_with_gaussian_features() -> None:
    config = load_config(vertical(num_parties=8) | {"data": {"dataset": "isolet", "data_dir": str(SHARED_DATA)}})
    data = prepare_workload(config).data
    assert data.likelihood == "gaussian"
    assert sum(data.widths) == 617
    assert len(data.widths) == 8
    assert len(data.train.labeled) + len(data.validation) == 500
    assert abs(np.nanmean(data.train.blocks[0])) < 0.1


@pytest.mark.parametrize(
    ("source", "field", "expected"),
    [
        (vertical(train_missing="mcar:2"), "vertical.train_missing", "must be mcar:<p in [0, 1)>"),
        (vertical(test_missing="often"), "vertical.test_missing", "mnar:<rate in (0, 1)>"),
        (vertical(test_missing=["mcar:0.0", "keep:5"]), "vertical.test_missing", "keep:<k> needs k <= the 4 parties"),
        (vertical(num_parties=1), "vertical.num_parties", "greater than or equal to 2"),
        (vertical() | {"data": {"dataset": "simpson-mnist"}}, "data.dataset", "a vertical task needs one of"),
        (
            vertical() | {"runs": [{"name": "x", "method": "fedavg"}]},
            "runs.0.method",
            "a [vertical] section gives a vertical task",
        ),
        (
            vertical() | {"runs": [{"name": "x", "method": "laser-vfl", "setting": "local"}]},
            "runs.0.setting",
            "'federated' only",
        ),
        (
            vertical() | {"runs": [{"name": "x", "method": "false-vfl", "params": {"stage1_rounds": 3}}]},
            "runs.0.params.stage1_rounds",
            "must be < federation.rounds (3)",
        ),
        (
            vertical() | {"runs": [{"name": "x", "method": "fedhssl", "params": {"pretrain_rounds": 3}}]},
            "runs.0.params.pretrain_rounds",
            "must be < federation.rounds (3)",
        ),
        (
            vertical() | {"runs": [{"name": "x", "method": "fedhssl", "params": {"mask_rate": 1.0}}]},
            "runs.0.params.mask_rate",
            "less than 1",
        ),
        (
            {"name": "h", "runs": [{"name": "x", "method": "laser-vfl"}]},
            "runs.0.method",
            "'laser-vfl' is a vertical method",
        ),
    ],
)
def test_bad_vertical_settings_name_their_field(source, field: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as caught:
        load_config(source)
    assert caught.value.field == field
    assert expected in str(caught.value)


def test_several_test_settings_are_drawn_independently_and_reported_by_name() -> None:
    # Prepare
    config = load_config(vertical(test_missing=["mcar:0.0", "mnar:0.9"]))

    # Execute
    data = prepare_workload(config).data
    metrics = VerticalTask(data, 3).test_accuracies(lambda name, split: float(split.present.mean()))

    # Assert
    assert list(data.tests) == ["MCAR 0", "MNAR 9"]
    assert metrics["accuracy"] == metrics["accuracy_mcar0"] == 1.0
    assert metrics["accuracy_mnar9"] < 0.3


def test_test_settings_must_be_distinct() -> None:
    with pytest.raises(ConfigError, match=r"vertical\.test_missing: needs distinct settings"):
        load_config(vertical(test_missing=["mcar:0.2", "mcar:0.20"]))


def test_validation_rows_are_labeled_training_rows_whose_labels_training_no_longer_sees() -> None:
    # Prepare
    config = load_config(vertical(label_budget=50, validation_fraction=0.2))
    without = prepare_workload(load_config(vertical(label_budget=50, validation_fraction=0.0))).data

    # Execute
    data = prepare_workload(config).data

    # Assert: the same 50 labeled rows, 10 of them moved to the validation split
    assert without.validation is None
    assert len(without.train.labeled) == 50
    assert data.validation is not None
    assert len(data.validation) == 10
    held_out = np.setdiff1d(without.train.labeled, data.train.labeled)
    assert len(held_out) == 10
    assert set(data.train.labeled) < set(without.train.labeled)
    np.testing.assert_array_equal(data.validation.y, without.train.y[held_out])
    np.testing.assert_array_equal(data.validation.present, data.train.present[held_out])
    assert "validation" in data.splits


def test_training_and_test_rows_are_masked_by_one_mar_mechanism() -> None:
    # Prepare: MAR reads the active block, which every row holds
    config = load_config(vertical(train_missing="mar:2", test_missing=["mar:2", "mar:1"]))
    data = prepare_workload(config).data
    parties = data.num_parties

    # Execute: the mechanism refitted on the training rows gives the probabilities of both splits' masks
    model = shared_mechanism([data.train.blocks[0]] * parties, Missingness("mar", 2), config.seed)
    weaker = shared_mechanism([data.train.blocks[0]] * parties, Missingness("mar", 1), config.seed)

    # Assert: one set of directions for every MAR setting, and a block goes missing where its probability is high in both splits
    for party in range(1, parties):
        np.testing.assert_array_equal(model.directions[party], weaker.directions[party])
        for split in (data.train, data.tests["MAR 2"]):
            probability = model.probabilities([split.blocks[0]] * parties)[:, party]
            assert np.corrcoef(probability, ~split.present[:, party])[0, 1] > 0.3


def test_the_paper_protocol_holds_out_no_validation_and_refuses_a_validation_fraction() -> None:
    # Prepare
    config = load_config(vertical(label_budget=50, protocol="paper", unaligned_prediction="majority"))

    # Execute
    data = prepare_workload(config).data
    (job,) = prepare_workload(config).jobs("federated", config)

    # Assert: every label trains, the task carries the protocol
    assert data.validation is None
    assert len(data.train.labeled) == 50
    assert isinstance(job.task, VerticalTask)
    assert (job.task.protocol, job.task.fallback) == ("paper", "majority")
    assert load_config(vertical()).vertical.validation_share == 0.2  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"vertical\.validation_fraction: the paper protocol tests the last round"):
        load_config(vertical(protocol="paper", validation_fraction=0.2))
    with pytest.raises(ConfigError, match=r"vertical\.protocol"):
        load_config(vertical(protocol="reference"))


def test_labels_drawn_among_all_rows_include_rows_the_active_party_does_not_hold() -> None:
    # Prepare
    active = prepare_workload(load_config(vertical(label_budget=200, validation_fraction=0.0))).data
    anywhere = prepare_workload(load_config(vertical(label_budget=200, validation_fraction=0.0, label_rows="all"))).data

    # Assert: the same masks; the budget is kept either way
    np.testing.assert_array_equal(active.train.present, anywhere.train.present)
    assert len(active.train.labeled) == len(anywhere.train.labeled) == 200
    assert active.train.present[active.train.labeled, 0].all()
    assert not anywhere.train.present[anywhere.train.labeled, 0].all()
