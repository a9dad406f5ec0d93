"""``fedmosaic predict`` and ``fedmosaic intervene``: CSV out, the same numbers as the Python API, one-line errors."""

import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedmosaic
from fedmosaic import cli
from fedmosaic.models import apply


def fedmosaic_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run the command line in this process: exit code, standard output, standard error."""
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *map(str, args)])
    try:
        cli.main()
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".npy"])
def test_predict_writes_one_column_per_probability_as_the_api_predicts(
    asia_run, tmp_path, monkeypatch, capsys, suffix: str
) -> None:
    # Prepare
    run = asia_run("cgm")
    model = fedmosaic.load_model(run.out)
    x = run.workload.splits.test.x[:20]
    frame = pd.DataFrame(x, columns=model.card["inputs"]["columns"])
    path = tmp_path / f"in{suffix}"
    {
        ".csv": lambda: frame.to_csv(path, index=False),
        ".parquet": lambda: frame.to_parquet(path),
        ".npy": lambda: np.save(path, x),
    }[suffix]()
    # Execute
    code, _, err = fedmosaic_cli(monkeypatch, capsys, "predict", run.out, path, "--out", tmp_path / "p.csv")
    # Assert
    assert code == 0, err
    written = pd.read_csv(tmp_path / "p.csv")
    expected = model.predict(x).table()
    assert list(written.columns) == list(expected.columns)
    assert [c for c in written.columns if c.startswith("dysp=")] == ["dysp=yes", "dysp=no"]
    np.testing.assert_allclose(written.to_numpy(), expected.to_numpy(), rtol=1e-6)


def test_intervene_sets_the_concept_for_every_row_and_writes_csv_to_standard_output(
    asia_run, monkeypatch, capsys
) -> None:
    run = asia_run("cgm")
    model = fedmosaic.load_model(run.out)
    examples = model.folder / model.card["examples"]
    code, out, err = fedmosaic_cli(monkeypatch, capsys, "intervene", model.folder, examples, "--set", "smoke=no")
    assert code == 0, err
    written = pd.read_csv(io.StringIO(out))
    expected = model.intervene(pd.read_csv(examples), {"smoke": "no"}).table()
    assert (written["smoke=no"] == 1.0).all()
    np.testing.assert_allclose(written.to_numpy(), expected.to_numpy(), rtol=1e-6)


def test_long_inputs_are_predicted_in_chunks_with_progress_and_the_same_result(asia_run, monkeypatch) -> None:
    run = asia_run("cbm")
    model = fedmosaic.load_model(run.out)
    x = run.workload.splits.test.x[:50]
    monkeypatch.setattr(apply, "CHUNK_ROWS", 16)
    seen: list[tuple[int, int]] = []
    chunked = apply.prediction_table(model, x, {"smoke": "yes"}, advance=lambda done, total: seen.append((done, total)))
    assert seen == [(16, 50), (32, 50), (48, 50), (50, 50)]
    pd.testing.assert_frame_equal(chunked, model.intervene(x, {"smoke": "yes"}).table())


@pytest.fixture
def bad_files(asia_run, digits_run, tmp_path: Path) -> dict[str, Path]:
    """Input files with one defect each, a newer card, and the models they go with."""
    model = fedmosaic.load_model(asia_run("cbm").out)
    frame = pd.read_csv(model.folder / model.card["examples"])
    frame.drop(columns="x3").to_csv(tmp_path / "missing.csv", index=False)
    frame.assign(extra=1.0).to_csv(tmp_path / "extra.csv", index=False)
    frame.assign(x3="high").to_csv(tmp_path / "text.csv", index=False)
    np.save(tmp_path / "narrow.npy", frame.to_numpy()[:, :-1])
    newer = Path(shutil.copytree(model.folder, tmp_path / "newer"))
    card = json.loads((newer / "card.json").read_text())
    (newer / "card.json").write_text(json.dumps({**card, "fedmosaic_version": "9.0.0"}))
    (tmp_path / "empty").mkdir()
    return {
        "fcm": model.folder,
        "examples": model.folder / model.card["examples"],
        "digits": digits_run.out / "model" / "00-fedavg",
        "digits-examples": digits_run.out / "model" / "00-fedavg" / "examples.csv",
        "newer": newer,
        **{name: tmp_path / name for name in ("missing.csv", "extra.csv", "text.csv", "narrow.npy", "empty")},
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["predict", "empty", "examples"], "error: {empty}: no model here (expected card.json"),
        (
            ["predict", "newer", "examples"],
            "error: {newer}/card.json: written by fedmosaic 9.0.0, newer than this 0.1.0",
        ),
        (["predict", "fcm", "missing.csv"], "error: inputs: missing columns ['x3']"),
        (["predict", "fcm", "extra.csv"], "error: inputs: unexpected columns ['extra']"),
        (
            ["predict", "fcm", "narrow.npy"],
            "error: inputs: expected 32 columns per row (shape (n, 32)), got shape (5, 31)",
        ),
        (["predict", "fcm", "text.csv"], "error: inputs: column 'x3' has dtype str, expected numbers (float32)"),
        (
            ["intervene", "fcm", "examples", "--set", "smok=yes"],
            "error: intervene: unknown concept 'smok'; did you mean 'smoke'?",
        ),
        (
            ["intervene", "fcm", "examples", "--set", "smoke=maybe"],
            "error: intervene: smoke=maybe: unknown category (expected one of yes, no)",
        ),
        (["intervene", "fcm", "examples", "--set", "smoke"], "error: --set: expected CONCEPT=VALUE (got 'smoke')"),
        (["intervene", "fcm", "examples"], "error: --set: give at least one CONCEPT=VALUE"),
        (
            ["intervene", "digits", "digits-examples", "--set", "smoke=yes"],
            "error: {digits}: a fedavg model has no concepts to intervene on",
        ),
    ],
    ids=[
        "no-model",
        "newer-card",
        "missing-column",
        "extra-column",
        "wrong-width",
        "wrong-dtype",
        "unknown-concept",
        "unknown-category",
        "malformed-set",
        "no-set",
        "no-concepts",
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(bad_files, monkeypatch, capsys, args: list[str], expected: str) -> None:
    # Prepare
    resolved = [str(bad_files.get(arg, arg)) for arg in args]
    # Execute
    code, out, err = fedmosaic_cli(monkeypatch, capsys, *resolved)
    # Assert
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(expected.format(**{k: v for k, v in bad_files.items() if "-" not in k}))


def test_the_demo_ends_with_its_model_an_intervene_command_that_works_its_report_and_explore(
    tmp_path, monkeypatch, capsys
) -> None:
    # Prepare: the demo's command on a small F-CMs experiment with several runs
    import functools
    import shlex

    import tomli_w

    from fedmosaic.data import bayesnet
    from fedmosaic.experiments import workloads

    source = {
        "name": "demo",
        "data": {"dataset": "bnlearn", "network": "asia", "samples": 1000},
        "concepts": {"num_clients": 4, "initial_clients": 2, "join_round": 2},
        "federation": {"rounds": 2, "workers": 1},
        "train": {"epochs": 1, "batch_size": 256},
        "runs": [
            {"name": "F-CMs", "method": "fcm"},
            {"name": "Centralized", "method": "fcm", "setting": "centralized"},
        ],
    }
    (tmp_path / "demo.toml").write_text(tomli_w.dumps(source))
    monkeypatch.setattr(cli, "DEMO_PRESET", str(tmp_path / "demo.toml"))
    monkeypatch.setattr(workloads, "sample_concept_splits", functools.partial(bayesnet.sample_concept_splits, epochs=1))
    # Execute
    code, out, err = fedmosaic_cli(monkeypatch, capsys, "demo", "--out", tmp_path / "runs" / "demo")
    # Assert
    assert code == 0, err
    lines = out.strip().splitlines()
    demo = tmp_path / "runs" / "demo"
    assert lines[-4] == f"report:  {demo / 'report.html'}"
    assert lines[-3] == f"model:   {demo / 'model' / '00-f-cms'}"
    assert lines[-1] == f"explore: fedmosaic explore {demo}"
    command = shlex.split(lines[-2].removeprefix("try:").strip())
    assert command[:2] == ["fedmosaic", "intervene"]
    assert "--set" in command
    code, out, err = fedmosaic_cli(monkeypatch, capsys, *command[1:])
    assert code == 0, err
    assert len(pd.read_csv(io.StringIO(out))) == 5
    # A second demo into the same folder is refused unless asked to overwrite: the first run stays
    results = (demo / "results.json").read_text()
    code, out, err = fedmosaic_cli(monkeypatch, capsys, "demo", "--out", demo)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "--overwrite" in err
    assert (demo / "results.json").read_text() == results
