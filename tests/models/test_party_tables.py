"""``fedmosaic predict`` with one table per party: the run's test accuracy from raw tables, a left-out party."""

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.table_workload import prepare_tables_run
from fedmosaic.experiments.workloads import prepare_workload

from .test_commands import fedmosaic_cli


@dataclass(frozen=True)
class VerticalTablesRun:
    tables: Path
    out: Path
    results: dict
    test_rows: np.ndarray


@pytest.fixture(scope="module")
def vertical_tables_run(tmp_path_factory: pytest.TempPathFactory) -> VerticalTablesRun:
    """The vertical example, two rounds of PlugVFL and of FALSE-VFL, in process."""
    root = tmp_path_factory.mktemp("vertical-tables")
    copy_examples(root)
    source = resolve_experiment(str(root / "vertical" / "vertical.toml")) | {
        "federation": {"rounds": 2},
        "runs": [
            {"name": "PlugVFL", "method": "plug-vfl"},
            {"name": "FALSE-VFL", "method": "false-vfl", "params": {"stage1_rounds": 1}},
        ],
    }
    config = load_config(source)
    results = run_experiment(config, root / "out")
    workload = prepare_tables_run(prepare_workload(config), config, None, {})
    return VerticalTablesRun(root / "vertical", root / "out", results, workload.test_rows)


def test_predict_from_every_partys_raw_table_gives_the_runs_test_accuracy(
    vertical_tables_run: VerticalTablesRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # Prepare: the tables in another order than the parties'
    run = vertical_tables_run
    tables = [run.tables / name for name in ("imaging.csv", "clinic.csv", "lab.csv")]
    # Execute
    code, _, err = fedmosaic_cli(
        monkeypatch, capsys, "predict", run.out / "model" / "00-plugvfl", *tables, "--out", tmp_path / "p.csv"
    )
    # Assert: the clinic's test rows predicted as the run predicted them
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv", dtype={"patient_id": str})
    clinic = pd.read_csv(run.tables / "clinic.csv", dtype={"patient_id": str})
    assert written["patient_id"].tolist() == clinic["patient_id"].tolist()
    test = written.iloc[run.test_rows]
    predicted = np.where(test["class=malignant"] > test["class=benign"], "malignant", "benign")
    accuracy = float((predicted == clinic["diagnosis"].to_numpy()[run.test_rows]).mean())
    assert accuracy == pytest.approx(run.results["runs"][0]["final"]["accuracy"], abs=1e-6)
    lab = set(pd.read_csv(run.tables / "lab.csv", dtype=str)["patient_id"])
    assert [("lab.csv" in held) for held in written["parties"]] == [i in lab for i in written["patient_id"]]


def _without_imaging(
    run: VerticalTablesRun, model: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> tuple[int, str, str]:
    """``fedmosaic predict`` of run model ``model`` with the clinic's and the lab's tables only."""
    tables = [run.tables / "clinic.csv", run.tables / "lab.csv"]
    return fedmosaic_cli(monkeypatch, capsys, "predict", run.out / "model" / model, *tables)


def test_false_vfl_predicts_with_a_partys_table_left_out_and_says_which_parties_were_present(
    vertical_tables_run: VerticalTablesRun, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # Execute
    code, out, err = _without_imaging(vertical_tables_run, "01-false-vfl", monkeypatch, capsys)
    # Assert
    assert code == 0, err
    written = pd.read_csv(io.StringIO(out))
    assert len(written) == 450
    assert set(written["parties"]) == {"clinic.csv", "clinic.csv;lab.csv"}
    assert np.isfinite(written[["class=benign", "class=malignant"]].to_numpy()).all()


def test_a_method_that_needs_every_party_refuses_a_left_out_table_on_one_line(
    vertical_tables_run: VerticalTablesRun, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # Execute
    code, out, err = _without_imaging(vertical_tables_run, "00-plugvfl", monkeypatch, capsys)
    # Assert
    assert code == 2
    assert out == ""
    assert err.strip().count("\n") == 0
    assert "no table of party 2" in err
    assert "plug-vfl model needs every party's table" in err
