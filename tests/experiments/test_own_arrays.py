"""The images example as the tutorial runs it (docs/own-model.md), and sites' .npz files that disagree."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.testing.tiny_worlds import NODES, sample_concepts

Command = Callable[..., tuple[object, str, str]]
"""The ``command`` fixture (``tests/experiments/conftest.py``): ``fedmosaic`` run in this process."""


@pytest.fixture
def images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The images example, copied as ``fedmosaic examples`` does, the working folder beside it."""
    copy_examples(tmp_path)
    monkeypatch.chdir(tmp_path / "images")
    return tmp_path / "images"


def test_the_tutorial_trains_the_own_cnn_and_predicts_only_with_trust_code(images: Path, command: Command) -> None:
    # Execute: as docs/own-model.md runs it, with fewer rounds
    ran = command("run", "images.toml", "--quiet", "--set", "federation.rounds=4")
    refused = command("predict", "runs/images/model/00-fedavg", "new-images.npy")
    predicted = command("predict", "runs/images/model/00-fedavg", "new-images.npy", "--trust-code")
    from_npz = command("predict", "runs/images/model/00-fedavg", "test.npz", "--trust-code")

    # Assert: ten digits, chance 10%; both federated runs well above it
    assert ran[0] in (None, 0)
    final = {
        run["name"]: run["final"]["accuracy"]
        for run in json.loads((images / "runs/images/results.json").read_text())["runs"]
    }
    assert final["FedAvg"] > 0.6
    assert final["FedCFA"] > 0.6
    assert refused[0] == 2
    assert "loading it would import" in refused[2]
    assert "mynets.py" in refused[2]
    assert predicted[0] in (None, 0)
    rows = predicted[1].strip().splitlines()
    assert rows[0].startswith("class=0,class=1")
    assert len(rows) == 1 + len(np.load(images / "new-images.npy"))
    assert len(from_npz[1].strip().splitlines()) == 1 + len(np.load(images / "test.npz")["x"])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda folder: np.savez(
                folder / "site-1.npz", x=np.zeros((20, 1, 4, 4), np.float32), y=np.zeros(20, np.int64)
            ),
            "error: tables.sites.1.file: site-1.npz: rows of shape (1, 4, 4), the test file's are (1, 8, 8)",
        ),
        (
            lambda folder: np.savez(folder / "site-2.npz", x=np.full((20, 1, 8, 8), np.nan), y=np.zeros(20, np.int64)),
            "error: tables.sites.2.file: site-2.npz: x holds 1280 NaN or infinite values (the first in row 1)",
        ),
        (
            lambda folder: np.savez(folder / "site-0.npz", x=np.zeros((20, 1, 8, 8)), y=np.full(20, 10)),
            "error: tables.sites.0.file: site-0.npz: y holds 10 in row 1, a class never declared",
        ),
        (
            lambda folder: np.savez(folder / "test.npz", x=np.array([None] * 4, dtype=object), y=np.arange(4)),
            "error: tables.test: test.npz: holds an object array (pickled Python objects), never loaded",
        ),
    ],
)
def test_a_bad_npz_file_is_one_line_exit_2_and_nothing_written(
    images: Path, command: Command, change, expected: str
) -> None:
    # Prepare
    change(images)

    # Execute
    code, _, error = command("run", "images.toml", "--quiet")

    # Assert
    assert code == 2
    assert error.startswith(expected)
    assert error.count("\n") == 1
    assert not (images / "runs").exists()


def test_npz_sites_mixed_with_tables_or_declared_as_another_task_are_refused(images: Path, command: Command) -> None:
    # Execute
    mixed = command("run", "images.toml", "--set", "tables.test=test.csv")
    concepts = command("run", "images.toml", "--set", "tables.kind=concepts")

    # Assert
    assert mixed[0] == concepts[0] == 2
    assert mixed[2] == "error: tables.test: with .npz sites every file is an .npz (x and y arrays), got test.csv\n"
    assert concepts[2] == "error: tables.classes: is not used by a concepts task (tables.kind = 'concepts')\n"


CONCEPT_ENCODER = """
from torch import nn


def encoder(input_shape, output_dim):
    (features,) = input_shape
    return nn.Sequential(nn.Linear(features, 32), nn.ReLU(), nn.Linear(32, output_dim), nn.ReLU())
"""
CONCEPT_SITES = """
name = "concept-arrays"
[tables]
kind = "concepts"
task = "y"
concepts = { a = ["0", "1"], b = ["0", "1", "2"], c = ["0", "1"], y = ["0", "1"] }
sites = [{ file = "site-0.npz" }, { file = "site-1.npz" }, { file = "site-2.npz" }]
test = "test.npz"
[federation]
rounds = 8
[train]
optimizer = "adam"
lr = 0.01
epochs = 5
batch_size = 32
[[runs]]
name = "F-CMs"
method = "fcm"
params = { model = { factory = "encoders:encoder" } }
"""


def _concept_sites(folder: Path) -> None:
    """Three sites of the tiny concept world as .npz: x of shape (n, 1, 7), the concepts each labels by name."""
    rng = np.random.default_rng(0)
    for k, subset in enumerate((("a", "b", "y"), ("b", "c", "y"), ("a", "b", "c", "y"))):
        x, values = sample_concepts(150, rng)
        labeled = {name: values[:, j].astype(str) for j, name in enumerate(NODES) if name in subset}
        np.savez(folder / f"site-{k}.npz", x=x.reshape(150, 1, 7), **labeled)
    x, values = sample_concepts(200, rng)
    np.savez(folder / "test.npz", x=x, **{name: values[:, j] for j, name in enumerate(NODES)})
    (folder / "encoders.py").write_text(CONCEPT_ENCODER)
    (folder / "concepts.toml").write_text(CONCEPT_SITES)


def test_f_cms_trains_on_concept_sites_own_npz_arrays_with_an_own_encoder(tmp_path: Path) -> None:
    # Prepare
    _concept_sites(tmp_path)
    config = load_config(resolve_experiment(str(tmp_path / "concepts.toml")))

    # Execute
    results = run_experiment(config, tmp_path / "out")

    # Assert: binary task and concepts of 2 or 3 categories; both well learned (the task is noisy: about 90% at best)
    final = results["runs"][0]["final"]
    assert final["concept_accuracy"] > 0.9
    assert final["accuracy"] > 0.8


def test_a_concept_category_never_declared_is_one_line_naming_the_file(tmp_path: Path) -> None:
    # Prepare
    _concept_sites(tmp_path)
    np.savez(tmp_path / "site-1.npz", x=np.zeros((20, 7)), b=np.array(["3"] * 20), c=np.array(["0"] * 20))

    # Execute
    with pytest.raises(ConfigError) as raised:
        prepare_workload(load_config(resolve_experiment(str(tmp_path / "concepts.toml"))))

    # Assert
    assert str(raised.value) == (
        "tables.sites.1.file: site-1.npz, array 'b', row 1: '3' is not a category of tables.concepts.b (0, 1, 2)"
    )
