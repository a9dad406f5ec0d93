"""The images example as the tutorial runs it (docs/own-model.md), and sites' .npz files that disagree."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.cli import main
from fedmosaic.examples import copy_examples


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[object, str, str]:
    """The command's entry point in this process: exit code, standard output and standard error."""
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return exited.value.code, captured.out, captured.err


@pytest.fixture
def images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The images example, copied as ``fedmosaic examples`` does, the working folder beside it."""
    copy_examples(tmp_path)
    monkeypatch.chdir(tmp_path / "images")
    return tmp_path / "images"


def test_the_tutorial_trains_the_own_cnn_and_predicts_only_with_trust_code(
    images: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Execute: as docs/own-model.md runs it, with fewer rounds
    ran = _main(monkeypatch, capsys, "run", "images.toml", "--quiet", "--set", "federation.rounds=4")
    refused = _main(monkeypatch, capsys, "predict", "runs/images/model/00-fedavg", "new-images.npy")
    predicted = _main(monkeypatch, capsys, "predict", "runs/images/model/00-fedavg", "new-images.npy", "--trust-code")
    from_npz = _main(monkeypatch, capsys, "predict", "runs/images/model/00-fedavg", "test.npz", "--trust-code")

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
    images: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], change, expected: str
) -> None:
    # Prepare
    change(images)

    # Execute
    code, _, error = _main(monkeypatch, capsys, "run", "images.toml", "--quiet")

    # Assert
    assert code == 2
    assert error.startswith(expected)
    assert error.count("\n") == 1
    assert not (images / "runs").exists()


def test_npz_sites_mixed_with_tables_or_on_a_concept_task_are_refused(
    images: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Execute
    mixed = _main(monkeypatch, capsys, "run", "images.toml", "--set", "tables.test=test.csv")
    concepts = _main(monkeypatch, capsys, "run", "images.toml", "--set", "tables.kind=concepts")

    # Assert
    assert mixed[0] == concepts[0] == 2
    assert mixed[2] == "error: tables.test: with .npz sites every file is an .npz (x and y arrays), got test.csv\n"
    assert concepts[2] == "error: tables.kind: .npz sites hold a horizontal task (x and y), got 'concepts'\n"
