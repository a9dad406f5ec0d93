"""Your own PyTorch model, named by import path in the experiment file: trained, recorded, checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import fedmosaic
from fedmosaic.cli import main
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.models.card import ModelFileError

MODULE = '''
from torch import nn


def small_cnn(input_shape, num_classes, width=8):
    """A user's own CNN: one convolution block, then a linear layer."""
    channels, height, breadth = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, width, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(width * height * breadth, num_classes),
    )


def wrong_output(input_shape, num_classes, width):
    return nn.Sequential(nn.Flatten(), nn.Linear(64, num_classes + 1))


def no_shape():
    return nn.Linear(2, 2)
'''
EXPERIMENT = """
name = "own-model"
seed = 0
[data]
dataset = "digits"
[partition]
scheme = "iid"
num_clients = 4
[federation]
rounds = {rounds}
[model]
factory = "{factory}"
args = {{ width = 6 }}
[train]
epochs = 1
lr = 0.05
{runs}
"""
HORIZONTAL = ("fedavg", "fedprox", "scaffold", "fedcfa")


def _experiment(folder: Path, factory: str = "mynets:small_cnn", methods=HORIZONTAL, rounds: int = 3) -> Path:
    (folder / "mynets.py").write_text(MODULE)
    runs = "\n".join(f'[[runs]]\nname = "{m}"\nmethod = "{m}"' for m in methods)
    path = folder / "experiment.toml"
    path.write_text(EXPERIMENT.format(rounds=rounds, factory=factory, runs=runs))
    return path


def test_an_own_model_beside_the_experiment_trains_with_every_horizontal_method(tmp_path: Path) -> None:
    # Prepare
    config = load_config(resolve_experiment(str(_experiment(tmp_path))))

    # Execute
    results = run_experiment(config, tmp_path / "out")

    # Assert: 10 classes, chance is 10%; each method is well above it after 3 rounds
    accuracy = {run["name"]: run["final"]["accuracy"] for run in results["runs"]}
    assert set(accuracy) == set(HORIZONTAL)
    assert all(value > 0.5 for value in accuracy.values()), accuracy


def test_the_run_records_the_factory_and_the_sha256_of_its_source(tmp_path: Path) -> None:
    # Prepare
    import hashlib

    config = load_config(resolve_experiment(str(_experiment(tmp_path, methods=("fedavg",), rounds=1))))
    digest = hashlib.sha256((tmp_path / "mynets.py").read_bytes()).hexdigest()

    # Execute
    results = run_experiment(config, tmp_path / "out")
    card = json.loads((tmp_path / "out" / "model" / "00-fedavg" / "card.json").read_text())

    # Assert
    recorded = results["config"]["model"]
    assert recorded["factory"] == f"{(tmp_path / 'mynets.py').resolve()}:small_cnn"
    assert recorded["code_sha256"] == digest
    assert 'code_sha256 = "' + digest in (tmp_path / "out" / "config.toml").read_text()
    assert card["architecture"]["model"]["code_sha256"] == digest


def test_a_model_with_code_loads_only_when_trusted_and_unchanged(tmp_path: Path) -> None:
    # Prepare
    config = load_config(resolve_experiment(str(_experiment(tmp_path, methods=("fedavg",), rounds=1))))
    run_experiment(config, tmp_path / "out")
    folder = tmp_path / "out" / "model" / "00-fedavg"
    x = np.zeros((3, 1, 8, 8), np.float32)

    # Execute
    with pytest.raises(ModelFileError) as untrusted:
        fedmosaic.load_model(folder)
    predicted = fedmosaic.load_model(folder, trust_code=True).predict(x)
    (tmp_path / "mynets.py").write_text(MODULE + "\n# edited\n")
    with pytest.raises(ModelFileError) as changed:
        fedmosaic.load_model(folder, trust_code=True)

    # Assert
    assert "loading it would import" in str(untrusted.value)
    assert "pass trust_code=True (--trust-code)" in str(untrusted.value)
    assert predicted.probabilities.shape == (3, 10)
    assert "is not the one this model was trained with" in str(changed.value)
    assert fedmosaic.load_model(folder, trust_code=True, allow_changed_code=True).predict(x).probabilities.shape == (
        3,
        10,
    )


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("missing_module:net", "model.factory: cannot import missing_module: ModuleNotFoundError"),
        ("mynets:absent", "model.factory: mynets.py has no attribute 'absent'"),
        ("mynets:no_shape", "must accept input_shape, num_classes and args ['width']"),
        ("mynets:wrong_output", "must output (batch, 10) logits for inputs of shape (1, 8, 8), got (2, 11)"),
        ("no-colon", "model.factory: must be 'module:callable' or 'file.py:callable', got 'no-colon'"),
    ],
)
def test_a_bad_factory_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], factory: str, expected: str
) -> None:
    # Prepare
    experiment = _experiment(tmp_path, factory=factory, methods=("fedavg",), rounds=1)
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["fedmosaic", "run", str(experiment), "--quiet", "--out", str(out)])

    # Execute
    with pytest.raises(SystemExit) as exited:
        main()
    error = capsys.readouterr().err

    # Assert
    assert exited.value.code == 2
    assert error.count("\n") == 1
    assert error.startswith("error: ")
    assert expected in error.replace(str(tmp_path.resolve()) + "/", "")
    assert not out.exists()


def test_kind_and_factory_together_are_refused(tmp_path: Path) -> None:
    # Prepare
    source = resolve_experiment(str(_experiment(tmp_path, methods=("fedavg",), rounds=1)))
    source["model"]["kind"] = "cnn"

    # Execute
    with pytest.raises(ConfigError) as raised:
        load_config(source)

    # Assert
    assert (
        str(raised.value) == "model.kind: has no effect with model.factory (your factory builds the model); remove it"
    )


ENCODER = '''
from torch import nn


def encoder(input_shape, output_dim, width=32):
    """A user's own input encoder for F-CMs: (batch, features) -> (batch, output_dim)."""
    (features,) = input_shape
    return nn.Sequential(nn.Linear(features, width), nn.GELU(), nn.Linear(width, output_dim), nn.GELU())
'''
CONCEPTS = """
name = "own-encoder"
[data]
dataset = "bnlearn"
network = "asia"
samples = 2000
[federation]
rounds = 5
[concepts]
join_round = 3
[[runs]]
name = "F-CMs"
method = "fcm"
params = { model = { factory = "encoders:encoder", args = { width = 24 } } }
[[runs]]
name = "Centralized"
method = "fcm"
setting = "centralized"
params = { model = { factory = "encoders:encoder" } }
"""


def test_f_cms_trains_its_concept_layers_on_an_own_input_encoder(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "encoders.py").write_text(ENCODER)
    (tmp_path / "concepts.toml").write_text(CONCEPTS)
    config = load_config(resolve_experiment(str(tmp_path / "concepts.toml")))

    # Execute
    results = run_experiment(config, tmp_path / "out")
    model = fedmosaic.load_model(tmp_path / "out" / "model" / "00-f-cms", trust_code=True)

    # Assert: asia's concepts are binary (chance 50%); the concepts are learned through the own encoder
    federated, centralized = (run["final"] for run in results["runs"])
    assert federated["concept_accuracy"] > 0.7
    assert centralized["concept_accuracy"] > 0.8
    assert centralized["accuracy"] > 0.65
    recorded = results["runs"][0]["params"]["model"]
    assert recorded["factory"].endswith("encoders.py:encoder")
    assert len(recorded["code_sha256"]) == 64
    encoder_weights = [name for name, _ in model.network.named_parameters() if name.startswith("encoder.")]
    assert encoder_weights == ["encoder.0.weight", "encoder.0.bias", "encoder.2.weight", "encoder.2.bias"]
    with pytest.raises(ModelFileError, match="loading it would import"):
        fedmosaic.load_model(tmp_path / "out" / "model" / "00-f-cms")


def test_an_encoder_of_the_wrong_width_is_one_line_naming_the_run_s_factory(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "encoders.py").write_text(
        ENCODER + "\n\ndef narrow(input_shape, output_dim):\n    return nn.Linear(input_shape[0], 3)\n"
    )
    (tmp_path / "concepts.toml").write_text(
        CONCEPTS.replace('factory = "encoders:encoder", args = { width = 24 }', 'factory = "encoders:narrow"')
    )
    config = load_config(resolve_experiment(str(tmp_path / "concepts.toml")))

    # Execute
    with pytest.raises(ConfigError) as raised:
        run_experiment(config, tmp_path / "out")

    # Assert: refused once the data is read, before anything is written
    assert raised.value.field == "runs.0.params.model.factory"
    assert "must return a torch.nn.Module of (batch, 64) outputs, got Linear of (2, 3)" in str(raised.value)
    assert not (tmp_path / "out").exists()


PARTY_ENCODERS = '''
from torch import nn


def party_encoder(input_shape, output_dim, party, width=16):
    """Each party's own encoder of its image patch: the active party (0) one convolution deeper than the others."""
    channels, rows, cols = input_shape
    layers = [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU()]
    if party == 0:
        layers += [nn.Conv2d(width, width, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(width * rows * cols, output_dim))


def head(input_shape, output_dim, width=32):
    """The active party's own classifier of a latent: one hidden layer of ``width`` units."""
    (latent,) = input_shape
    return nn.Sequential(nn.Linear(latent, width), nn.ReLU(), nn.Linear(width, output_dim))
'''
VERTICAL = """
name = "own-party-encoders"
[data]
dataset = "digits"
[vertical]
[federation]
rounds = 10
[[runs]]
name = "LASER-VFL"
method = "laser-vfl"
params = { passes = 5, model = { factory = "parties:party_encoder", args = { width = 24 } } }
[[runs]]
name = "Vanilla VFL"
method = "vanilla-vfl"
params = { passes = 5, model = { factory = "parties:party_encoder" } }
"""


def test_split_vertical_methods_train_each_party_s_own_encoder(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "parties.py").write_text(PARTY_ENCODERS)
    (tmp_path / "vertical.toml").write_text(VERTICAL)
    config = load_config(resolve_experiment(str(tmp_path / "vertical.toml")))

    # Execute
    results = run_experiment(config, tmp_path / "out")
    model = fedmosaic.load_model(tmp_path / "out" / "model" / "00-laser-vfl", trust_code=True)

    # Assert: ten digits, chance 10%; both at least 25 points above it (Vanilla VFL trains on the few
    # fully aligned labeled rows only)
    for run in results["runs"]:
        assert run["final"]["accuracy"] > 0.35, (run["name"], run["final"])
        assert len(run["params"]["model"]["code_sha256"]) == 64
    active = [name for name, _ in model.active.named_parameters() if name.startswith("encoder.")]
    # party 0's deeper encoder, on its patch: unflattened, then the factory's module
    assert active == [f"encoder.1.{k}.{p}" for k in (0, 2, 5) for p in ("weight", "bias")]
    with pytest.raises(ModelFileError, match="loading it would import"):
        fedmosaic.load_model(tmp_path / "out" / "model" / "00-laser-vfl")


FALSE_VFL = """
name = "own-party-networks"
[data]
dataset = "digits"
[vertical]
[federation]
rounds = 16
[[runs]]
name = "FALSE-VFL"
method = "false-vfl"
params = { stage1_rounds = 10, stage1_passes = 3, lr = 0.003, model = { factory = "parties:party_encoder" }, head = { factory = "parties:head" } }
"""


def test_false_vfl_trains_each_party_s_own_encoder_network_and_its_own_head(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "parties.py").write_text(PARTY_ENCODERS)
    (tmp_path / "false.toml").write_text(FALSE_VFL)
    config = load_config(resolve_experiment(str(tmp_path / "false.toml")))

    # Execute
    results = run_experiment(config, tmp_path / "out")
    model = fedmosaic.load_model(tmp_path / "out" / "model" / "00-false-vfl", trust_code=True)

    # Assert: ten digits, chance 10% (the MLP's run of this setting: 59.6%)
    (run,) = results["runs"]
    assert run["final"]["accuracy"] > 0.35, run["final"]
    assert len(run["params"]["model"]["code_sha256"]) == 64
    assert run["params"]["head"]["code_sha256"] == run["params"]["model"]["code_sha256"]  # one module
    convolutions = [name for name, _ in model.active.party.encoder.named_parameters() if name.endswith("weight")]
    assert convolutions == ["net.0.1.0.weight", "net.0.1.2.weight", "net.0.1.5.weight", "net.2.weight"]
    head_layers = [name for name, _ in model.active.classifier.named_parameters()]
    assert head_layers == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]
    with pytest.raises(ModelFileError, match="loading it would import"):
        fedmosaic.load_model(tmp_path / "out" / "model" / "00-false-vfl")


def test_fedhssl_refuses_an_own_encoder_on_one_line(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "parties.py").write_text(PARTY_ENCODERS)
    (tmp_path / "vertical.toml").write_text(VERTICAL.replace('method = "laser-vfl"', 'method = "fedhssl"'))

    # Execute
    with pytest.raises(ConfigError) as raised:
        load_config(resolve_experiment(str(tmp_path / "vertical.toml")))

    # Assert
    assert raised.value.field.startswith("runs.0.params.model")
    assert "an own encoder is not supported: FedHSSL pre-trains its MLP encoders by SimSiam" in str(raised.value)


MODULE_NET = """
class Net(nn.Module):
    def __init__(self, input_shape, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.body(x)


def module_net(input_shape, num_classes, width=8):
    return Net(input_shape, num_classes)
"""


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        (
            ["model.factory=mynets:wrong_output"],
            "error: model.factory: mynets.py:wrong_output must output (batch, 10) logits",
        ),
        (["runs.1.params.split=99"], "error: runs.1.params.split: split must be in [1, 3] for this model, got 99"),
        (
            ["model.factory=mynets:module_net"],
            "error: runs.1.method: FedCFA cuts the model into encoder and decoder: [model] must build an "
            "nn.Sequential, got Net",
        ),
    ],
)
def test_what_a_run_s_method_cannot_train_is_refused_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sets: list[str],
    expected: str,
) -> None:
    # Prepare: FedAvg then FedCFA; a factory given with --set is found beside the experiment, as in the file
    experiment = _experiment(tmp_path, methods=("fedavg", "fedcfa"), rounds=1)
    (tmp_path / "mynets.py").write_text(MODULE + MODULE_NET)
    monkeypatch.chdir(tmp_path)
    options = [item for value in sets for item in ("--set", value)]
    monkeypatch.setattr(sys, "argv", ["fedmosaic", "run", experiment.name, "--quiet", "--out", "out", *options])

    # Execute
    with pytest.raises(SystemExit) as exited:
        main()
    error = capsys.readouterr().err

    # Assert
    assert exited.value.code == 2
    assert error.replace(str(tmp_path.resolve()) + "/", "").startswith(expected)
    assert error.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_resuming_after_the_module_changed_names_the_code_s_hash(tmp_path: Path) -> None:
    # Prepare: a run, then its module edited
    experiment = _experiment(tmp_path, methods=("fedavg",), rounds=1)
    run_experiment(load_config(resolve_experiment(str(experiment))), tmp_path / "out")
    (tmp_path / "mynets.py").write_text(MODULE + "\n# edited\n")

    # Execute
    with pytest.raises(ConfigError) as raised:
        run_experiment(load_config(resolve_experiment(str(experiment))), tmp_path / "out", resume=True)

    # Assert
    assert raised.value.field == "--resume"
    assert "first at model.code_sha256" in str(raised.value)
