"""The views example: vertical parties' own ``.npz`` arrays, aligned by their IDs, each encoded by its own CNN."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.examples import copy_examples

Command = Callable[..., tuple[object, str, str]]
"""The ``command`` fixture (``tests/experiments/conftest.py``): ``fedmosaic`` run in this process."""


@pytest.fixture
def views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The views example, copied as ``fedmosaic examples`` does, the working folder beside it."""
    copy_examples(tmp_path)
    monkeypatch.chdir(tmp_path / "views")
    return tmp_path / "views"


CUT_DOWN = [
    "--set",
    "federation.rounds=8",
    "--set",
    'runs=[{name = "FALSE-VFL (CNN)", method = "false-vfl", params = {stage1_rounds = 5, stage1_passes = 2, lr = 0.003,'
    ' model = {factory = "cameras:view_encoder"}}}, {name = "LASER-VFL (CNN)", method = "laser-vfl",'
    ' params = {passes = 3, model = {factory = "cameras:view_encoder"}}}, {name = "Local", method = "vfl-local",'
    " params = {passes = 3}}]",
]


def test_cameras_own_views_train_with_their_own_cnns_and_predict_from_their_files(
    views: Path, command: Command
) -> None:
    # Execute: the example cut down to 8 rounds
    ran = command("run", "views.toml", "--quiet", *CUT_DOWN)
    model = "runs/views/model/00-false-vfl-cnn"
    cameras = [f"camera-{k}.npz" for k in range(3)]
    refused = command("predict", model, *cameras)
    predicted = command("predict", model, *reversed(cameras), "--trust-code")

    # Assert: ten digits, chance 10%; both federated runs use the other cameras' views
    assert ran[0] in (None, 0)
    results = json.loads((views / "runs/views/results.json").read_text())
    final = {run["name"]: run["final"]["accuracy"] for run in results["runs"]}
    assert final["FALSE-VFL (CNN)"] > 0.6, final
    assert final["LASER-VFL (CNN)"] > 0.6, final
    assert refused[0] == 2
    assert "loading it would import" in refused[2]
    assert "cameras.py" in refused[2]
    assert predicted[0] in (None, 0), predicted[2]
    rows = predicted[1].strip().splitlines()
    assert rows[0].split(",")[0] == "digit_id"
    assert len(rows) == 1 + len(np.load(views / "camera-0.npz")["ids"])  # camera 0's digits are the rows predicted


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda folder: np.savez(folder / "camera-1.npz", ids=np.arange(20), x=np.zeros((20, 1, 4, 4))),
            "error: tables.parties.1.file: camera-1.npz: x holds examples of shape (1, 4, 4), but the party's shape is (1, 8, 5)",
        ),
        (
            lambda folder: np.savez(folder / "camera-2.npz", ids=np.zeros(20, np.int64), x=np.zeros((20, 1, 4, 4))),
            "error: tables.parties.2.file: camera-2.npz, array 'ids': ID in rows 1 and 2 repeats (IDs must be unique)",
        ),
        (
            lambda folder: np.savez(folder / "camera-2.npz", ids=np.arange(20), x=np.full((20, 1, 4, 4), np.inf)),
            "error: tables.parties.2.file: camera-2.npz: x holds 320 NaN or infinite values (the first in row 1)",
        ),
        (
            lambda folder: np.savez(
                folder / "camera-0.npz", ids=np.arange(20), x=np.zeros((20, 1, 8, 3)), y=np.full(20, 10)
            ),
            "error: tables.parties.0.file: camera-0.npz, array 'y', row 1: '10' is not a category of tables.classes",
        ),
        (
            lambda folder: np.savez(
                folder / "camera-1.npz", ids=np.arange(20), x=np.zeros((20, 1, 8, 5)), y=np.zeros(20)
            ),
            "error: tables.parties.1.file: camera-1.npz: needs the arrays ids, x and nothing else, found ids, x, y",
        ),
        (
            lambda folder: np.savez(
                folder / "camera-1.npz", ids=np.array([None] * 20, dtype=object), x=np.zeros((20, 1, 8, 5))
            ),
            "error: tables.parties.1.file: camera-1.npz: holds an object array (pickled Python objects), never loaded",
        ),
    ],
)
def test_a_bad_party_npz_is_one_line_exit_2_and_nothing_written(
    views: Path, command: Command, change, expected: str
) -> None:
    # Prepare
    change(views)

    # Execute
    code, _, error = command("run", "views.toml", "--quiet")

    # Assert
    assert code == 2
    assert error.startswith(expected), error
    assert error.count("\n") == 1
    assert not (views / "runs").exists()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("shape = [1, 8, 5]\n", "", "error: tables.parties.1.shape: an .npz party needs the shape of one example of x"),
        (
            "shape = [1, 8, 5]",
            'features = ["a"]',
            "error: tables.parties.1.features: an .npz party holds the arrays ids and x",
        ),
        (
            'id = "digit_id"',
            'id = "digit_id"\nlabel = "digit"',
            "error: tables.label: the active party's .npz holds its labels as the array y",
        ),
        ('"camera-2.npz"', '"camera-2.csv"', "error: tables.parties.2.shape: is for an .npz party's arrays"),
    ],
)
def test_a_party_schema_that_does_not_fit_its_file_kind_is_one_line(
    views: Path, command: Command, old: str, new: str, expected: str
) -> None:
    # Prepare
    experiment = views / "views.toml"
    experiment.write_text(experiment.read_text().replace(old, new))

    # Execute
    code, _, error = command("run", "views.toml", "--quiet")

    # Assert
    assert code == 2
    assert error.startswith(expected), error
    assert not (views / "runs").exists()


@pytest.mark.slow
def test_on_flower_s_simulation_the_views_give_the_in_process_numbers(views: Path, command: Command) -> None:
    # Prepare
    one_run = [
        "--set",
        "federation.rounds=3",
        "--set",
        'runs=[{name = "LASER-VFL (CNN)", method = "laser-vfl", params = {passes = 1,'
        ' model = {factory = "cameras:view_encoder"}}}]',
    ]

    # Execute
    simulated = command("run", "views.toml", "--quiet", "--engine", "flower-simulation", "--out", "sim", *one_run)
    in_process = command("run", "views.toml", "--quiet", "--out", "local", *one_run)

    # Assert
    assert simulated[0] in (None, 0), simulated[2]
    assert in_process[0] in (None, 0), in_process[2]
    finals = [json.loads((views / out / "results.json").read_text())["runs"][0]["final"] for out in ("sim", "local")]
    assert finals[0]["accuracy"] == finals[1]["accuracy"]
