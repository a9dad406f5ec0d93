"""Bad sites' tables: one line naming the field and the problem, exit code 2, nothing written."""

import sys
from pathlib import Path

import pandas as pd
import pytest

from fedmosaic import cli
from fedmosaic.examples import copy_examples


def _main(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    return int(stop.value.code or 0), capsys.readouterr().err


def _edit(path: Path, change) -> None:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(table)
    table.to_csv(path, index=False)


def _set_cell(column: str, row: int, value: str):
    def change(table: pd.DataFrame) -> None:
        table.loc[row, column] = value

    return change


def _append_to(path: Path, line: str) -> None:
    path.write_text(path.read_text() + line + "\n")


def _keep_rows(path: Path, rows: int) -> None:
    path.write_text("\n".join(path.read_text().splitlines()[: 1 + rows]) + "\n")


def _declare(toml: Path, site: int, concepts: list[str]) -> None:
    text = toml.read_text()
    marker = f'file = "hospital-{site}.csv"'
    toml.write_text(text.replace(marker, f"{marker}\nconcepts = {concepts!r}".replace("'", '"')))


ASIA_CASES = {
    "a missing column": (
        lambda d: _edit(d / "hospital-0.csv", lambda t: t.pop("f3")),
        "error: tables.sites.0.file: hospital-0.csv has no column 'f3'",
    ),
    "a column of the wrong type": (
        lambda d: _edit(d / "hospital-1.csv", _set_cell("f2", 4, "n/a")),
        "error: tables.sites.1.file: hospital-1.csv, column 'f2', row 5: expected a number, got 'n/a'",
    ),
    "a category not in the schema": (
        lambda d: _edit(d / "hospital-2.csv", _set_cell("smoke", 0, "sometimes")),
        "error: tables.sites.2.file: hospital-2.csv, column 'smoke', row 1: 'sometimes' is not a category of tables.concepts.smoke (no, yes)",
    ),
    "a site too small to send statistics of": (
        lambda d: _keep_rows(d / "hospital-1.csv", 5),
        "error: tables.sites.1.file: 5 rows; a site needs at least 10",
    ),
    "a feature out of range": (
        lambda d: _edit(d / "hospital-1.csv", _set_cell("f2", 4, "1e300")),
        "error: tables.sites.1.file: hospital-1.csv, column 'f2', row 5: 1e300 is out of range (a feature is a"
        " float32 within ±1e+15; rescale the column)",
    ),
    "a row with more cells than the header": (
        lambda d: _append_to(d / "hospital-0.csv", "0,0,0,0,0,0,0,0,no,no,no,no,yes,0,0"),
        "error: tables.sites.0.file: cannot read hospital-0.csv: line ",
    ),
    "a concept a site declares but never labels": (
        lambda d: (
            _edit(d / "hospital-0.csv", lambda t: t.insert(len(t.columns), "tub", "")),
            _declare(d / "asia.toml", 0, ["smoke", "lung", "bronc", "tub", "dysp"]),
        ),
        "error: tables.sites.0.concepts: declares 'tub', but hospital-0.csv labels it in no row",
    ),
    "a graph belief with an unknown concept": (
        lambda d: _append_to(d / "hospital-1-graph.csv", "smoke,tub,0.5"),
        "error: tables.sites.1.graph: hospital-1-graph.csv, row 4: 'smoke' is not a concept this site labels (asia, tub, either, dysp)",
    ),
    "a graph belief with a confidence outside [0, 1]": (
        lambda d: _edit(d / "hospital-1-graph.csv", _set_cell("confidence", 0, "1.5")),
        "error: tables.sites.1.graph: hospital-1-graph.csv: confidence matrix: belief in edge 'asia' -> 'tub' must be in [0, 1] (got 1.5)",
    ),
    "a graph belief whose two directions sum over 1": (
        lambda d: _append_to(d / "hospital-1-graph.csv", "tub,asia,0.3"),
        "error: tables.sites.1.graph: hospital-1-graph.csv: confidence matrix: beliefs in 'asia' -> 'tub' and 'tub' -> 'asia' sum to 1.2 > 1",
    ),
    "sites whose schemas disagree": (
        lambda d: _edit(d / "hospital-2.csv", lambda t: t.insert(0, "age", "40")),
        "error: tables.sites.2.file: hospital-2.csv has column 'age', which the shared schema does not declare: the sites' schemas disagree",
    ),
    "a missing table": (
        lambda d: (d / "hospital-1.csv").unlink(),
        "error: tables.sites.1.file: no such file: ",
    ),
}

VERTICAL_CASES = {
    "duplicate IDs in a party's table": (
        lambda d: _edit(
            d / "lab.csv", _set_cell("patient_id", 7, pd.read_csv(d / "lab.csv", dtype=str)["patient_id"][2])
        ),
        "error: tables.parties.1.file: lab.csv, column 'patient_id': ID in rows 3 and 8 repeats (IDs must be unique)",
    ),
    "a feature too large to standardise": (
        lambda d: _edit(d / "lab.csv", _set_cell("mean_perimeter", 4, "1e16")),
        "error: tables.parties.1.file: lab.csv, column 'mean_perimeter', row 5: 1e16 is out of range",
    ),
    "an empty intersection": (
        lambda d: _edit(d / "lab.csv", lambda t: t.__setitem__("patient_id", "L" + t["patient_id"])),
        "error: tables.parties.1.file: lab.csv has no ID in common with the active party (the intersection is empty)",
    ),
}


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    copy_examples(tmp_path / "examples")
    return tmp_path / "examples"


@pytest.mark.parametrize("case", list(ASIA_CASES) + list(VERTICAL_CASES))
def test_bad_tables_give_one_line_exit_code_2_and_write_nothing(
    case: str, examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    folder, toml = (examples / "asia", "asia.toml") if case in ASIA_CASES else (examples / "vertical", "vertical.toml")
    spoil, expected = {**ASIA_CASES, **VERTICAL_CASES}[case]
    spoil(folder)
    monkeypatch.chdir(tmp_path)
    # Execute
    code, err = _main(["run", str(folder / toml), "--out", "out", "--quiet"], capsys, monkeypatch)
    # Assert
    assert code == 2
    assert err.startswith(expected), err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_deploy_checks_each_nodes_own_table_before_starting_anything(
    examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    folder = examples / "asia"
    for k in range(3):
        (folder / f"hospital-{k}.csv").rename(folder / f"node-{k}.csv")
    _edit(folder / "node-2.csv", _set_cell("smoke", 0, "sometimes"))
    monkeypatch.chdir(tmp_path)
    args = ["deploy", str(folder / "asia.toml"), "--node-file", str(folder / "node-{node}.csv"), "--out", "out"]
    # Execute
    code, err = _main([*args, "--set", 'runs=[{name="F-CMs",method="fcm"}]'], capsys, monkeypatch)
    # Assert
    assert code == 2
    assert err.startswith(
        "error: tables.sites.2.file: node-2.csv, column 'smoke', row 1: 'sometimes' is not a category"
    ), err
    assert not (tmp_path / "out").exists()
