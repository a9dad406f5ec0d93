"""Shipped presets: every one is a valid experiment."""

import sys
from pathlib import Path

import pytest

from fedmosaic.cli import main
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import grid_points, load_config
from fedmosaic.experiments.presets import describe_presets, preset_names, preset_source, resolve_experiment
from fedmosaic.methods.concepts.client import OPTIMIZER_STATE


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_validates_and_describes_itself(name: str) -> None:
    config = load_config(preset_source(name))
    assert config.name == name
    assert config.description


def test_the_documented_presets_are_shipped() -> None:
    assert {
        "digits-fedavg",
        "mnist-fedavg",
        "fcm-asia",
        "fcm-sachs",
        "fcm-alarm",
        "fcm-insurance",
        "fcm-hailfinder",
        "fcm-table",
        "fcm-ablation",
    } <= set(preset_names())
    assert dict(describe_presets())["fcm-asia"].startswith("F-CMs vs centralized")


def test_an_unknown_preset_suggests_the_closest_name() -> None:
    with pytest.raises(ConfigError, match="did you mean 'fcm-asia'"):
        resolve_experiment("fcm-asai")


def test_every_point_of_the_fedcfa_table_has_60_clients_sampled_20_percent() -> None:
    # A grid axis whose values are tables replaces the whole section, so each value must repeat num_clients.
    points = grid_points(preset_source("fedcfa-table"))

    configs = [load_config(source) for _, source in points]

    assert len(configs) == 18
    assert {(c.partition.num_clients, c.federation.fraction) for c in configs} == {(60, 0.2)}


def test_the_fedcfa_reference_preset_is_fedcfa_simpson_with_the_references_method_and_local_training() -> None:
    # Prepare
    simpson = load_config(preset_source("fedcfa-simpson"))
    # Execute
    reference = load_config(preset_source("fedcfa-reference"))
    # Assert: only the local training and the runs differ
    assert (reference.train.epochs, reference.train.batch_size) == (1, 128)
    assert [r.method for r in reference.runs] == ["fedcfa-reference", "fedavg"]
    assert reference.data.model_copy(update={"evaluate_on": "test"}) == simpson.data
    assert reference.model == simpson.model
    assert reference.federation == simpson.federation
    assert reference.train.model_copy(update={"epochs": 5, "batch_size": 64}) == simpson.train


def test_fedcfa_simpson_shows_the_references_loss_and_the_recommended_fedcfa_as_separate_rows() -> None:
    # Execute
    runs = {run.name: run for run in load_config(preset_source("fedcfa-simpson")).runs}
    # Assert
    reference, recommended = runs["FedCFA (reference loss)"], runs["FedCFA (recommended)"]
    assert reference.params["positive_weight"] == reference.params["negative_weight"] == 5.0
    assert (reference.params["positive_rule"], reference.params["negative_rule"]) == (
        "signed-smallest",
        "signed-largest",
    )
    assert (recommended.params["positive_weight"], recommended.params["negative_weight"]) == (0.0, 2.5)


def test_the_fedcfa_cifar_preset_is_the_reference_code_s_setting() -> None:
    # Execute
    config = load_config(preset_source("fedcfa-cifar"))

    # Assert: hua-zi/FedCFA alg/main.py's defaults (60 clients, 20% a round, Dirichlet 0.6, 1 epoch at
    # batch 128, lr 0.01, 500 rounds, top-k 24, loss 1:5:5) on its ResNet-18 cut after layer1
    assert (config.data.dataset, config.model.kind) == ("cifar-10", "resnet18")
    assert (config.partition.scheme, config.partition.num_clients, config.partition.alpha) == ("dirichlet", 60, 0.6)
    assert (config.federation.rounds, config.federation.fraction) == (500, 0.2)
    train = config.train
    assert (train.epochs, train.batch_size, train.lr, train.momentum, train.weight_decay) == (1, 128, 0.01, 0.9, 5e-4)
    assert [run.method for run in config.runs] == [
        "fedavg",
        "fedprox",
        "scaffold",
        "fedmix",
        "fedcfa-reference",
        "fedcfa",
    ]


def test_the_fedcfa_cifar_preset_without_its_files_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    monkeypatch.setenv("FEDMOSAIC_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "argv", ["fedmosaic", "run", "fedcfa-cifar", "--quiet", "--out", str(tmp_path / "out")])

    # Execute
    with pytest.raises(SystemExit) as exited:
        main()

    # Assert
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        f"error: data file not found: cifar-10-batches-py/data_batch_1 (searched {tmp_path / 'data'} "
        "(chosen by FEDMOSAIC_DATA); the dataset is published at https://www.cs.toronto.edu/~kriz/cifar.html)\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", [n for n in preset_names() if n.startswith("fcm-")])
def test_every_fcm_preset_trains_in_f_cms_default_regime(name: str) -> None:
    # Execute
    config = load_config(preset_source(name))

    # Assert: the optimizer kept across rounds (unset means F-CMs' default, kept), never started afresh
    assert {run.method for run in config.runs} == {"fcm"}
    assert (config.train.optimizer_state or OPTIMIZER_STATE) == "kept"
