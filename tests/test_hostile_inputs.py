"""Hostile inputs through the real command line: each gives one line and exit code 2, and loses nothing.

Every case is a defect a hostile test of the commands once found (issue 35):
output folders shared, lost or replaced too early; numbers that hang, allocate
wildly or silently break a run; files that are not what they claim. The
command's entry point runs in this process (one interpreter start for all
cases), except where two processes are the point.
"""

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w
from safetensors.numpy import load_file, save_file
from starlette.testclient import TestClient

from fedmosaic.cli import main
from fedmosaic.deploy.processes import free_port
from fedmosaic.errors import FedmosaicError
from fedmosaic.examples import copy_examples
from fedmosaic.experiments import runner
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.lock import locked_folder
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.explore import open_run
from fedmosaic.explore.app import MAX_BODY_BYTES, create_app
from fedmosaic.explore.serve import server

TINY = {
    "name": "tiny",
    "data": {"dataset": "digits"},
    "partition": {"num_clients": 3},
    "federation": {"rounds": 1},
    "model": {"hidden": [8]},
    "runs": [{"name": "FedAvg", "method": "fedavg"}],
}
"""One federated run of one round on digits: what the cases check is the command, not the training."""


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path, *args: str) -> tuple[int, str]:
    """The command's entry point called in this process from ``cwd``: its exit code and standard error."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("FEDMOSAIC_DATA", str(cwd / "no-data-here"))
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *args])
    try:
        main()
    except SystemExit as exited:
        code = exited.code
    else:
        code = 0
    return int(code or 0), capsys.readouterr().err


def _one_line(stderr: str, start: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(start), stderr
    assert "Traceback" not in stderr


def _experiment(folder: Path, **changes: object) -> str:
    (folder / "tiny.toml").write_text(tomli_w.dumps({**TINY, **changes}))
    return "tiny.toml"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- output folders: locked, resumed only by their own experiment, replaced only when the new run completes ---


def test_a_folder_another_run_holds_is_refused_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: this process holds the folder's lock, as a running run does
    toml = _experiment(tmp_path)
    with locked_folder(tmp_path / "out"):
        # Execute
        code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")
    # Assert
    assert code == 2
    _one_line(stderr, "error: --out: out is in use by another run (process ")
    assert not (tmp_path / "out" / "config.toml").exists()


def test_a_crashed_run_leaves_no_lock_held(tmp_path: Path) -> None:
    # Prepare: a process takes the folder's lock and is killed with SIGKILL
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from fedmosaic.experiments.lock import locked_folder\n"
            "with locked_folder(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
            str(tmp_path / "out"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=30)
    # Execute / Assert: the lock is free at once
    with locked_folder(tmp_path / "out"):
        pass


def test_two_runs_started_together_into_one_folder_one_is_refused(tmp_path: Path) -> None:
    # Prepare
    toml = _experiment(tmp_path)
    env = {**os.environ, "FEDMOSAIC_DATA": str(tmp_path / "no-data-here")}
    command = [sys.executable, "-c", "from fedmosaic.cli import main; main()", "run", toml, "--out", "out", "--quiet"]
    # Execute: two runs with different seeds, started together
    started = [
        subprocess.Popen([*command, "--seed", str(seed)], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        for seed in (0, 1)
    ]
    finished = [(process.wait(timeout=300), process.communicate()[1]) for process in started]
    # Assert: one ran, the other was refused on one line (the lock, or the finished run it found); the results are
    # the run's that succeeded
    codes = sorted(code for code, _ in finished)
    assert codes == [0, 2], finished
    winner = next(seed for seed, (code, _) in enumerate(finished) if code == 0)
    refused = next(stderr for code, stderr in finished if code == 2)
    _one_line(refused, "error: --out: out ")
    assert json.loads((tmp_path / "out" / "results.json").read_text())["seed"] == winner


def test_resume_refuses_a_folder_holding_another_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a finished run
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 0
    before = _snapshot(tmp_path / "out")
    other = _experiment(tmp_path, name="other")
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", other, "--out", "out", "--resume", "--quiet")
    changed, changed_err = _cli(
        monkeypatch, capsys, tmp_path, "run", toml, "--set", "train.lr=0.1", "--out", "out", "--resume", "--quiet"
    )
    # Assert: another experiment, or the same one with another configuration, is refused; nothing changed
    assert code == 2
    _one_line(stderr, "error: --resume: out holds the experiment 'tiny' (configuration ")
    assert "not 'other'" in stderr
    assert changed == 2
    _one_line(changed_err, "error: --resume: out holds the experiment 'tiny' (configuration ")
    assert _snapshot(tmp_path / "out") == before


def test_resume_into_a_folder_that_does_not_exist_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", _experiment(tmp_path), "--out", "gone", "--resume")
    assert code == 2
    _one_line(
        stderr, "error: --resume: gone does not exist: there is no run to resume; leave out --resume to start one"
    )
    assert not (tmp_path / "gone").exists()


def test_a_folder_left_with_only_the_configuration_of_a_killed_run_is_taken_over_by_that_experiment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the folder of a run killed before its first checkpoint holds its configuration only
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "done", "--quiet")[0] == 0
    (tmp_path / "out").mkdir()
    shutil.copy(tmp_path / "done" / "config.toml", tmp_path / "out" / "config.toml")
    before = _snapshot(tmp_path / "out")
    other = _experiment(tmp_path, name="other")
    # Execute
    refused = [
        _cli(monkeypatch, capsys, tmp_path, "run", other, "--out", "out", "--quiet", *flag)
        for flag in ([], ["--resume"])
    ]
    after = _snapshot(tmp_path / "out")
    toml = _experiment(tmp_path)
    taken = _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--resume", "--quiet")
    # Assert: another experiment is refused with or without --resume, and leaves the folder as it was
    for (code, stderr), field in zip(refused, ("--out", "--resume"), strict=True):
        assert code == 2
        _one_line(stderr, f"error: {field}: out holds the experiment 'tiny' (configuration ")
    assert after == before
    assert taken[0] == 0, taken[1]
    assert (tmp_path / "out" / "results.json").exists()


def test_resume_accepts_a_change_that_never_changes_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 0
    code, stderr = _cli(
        monkeypatch,
        capsys,
        tmp_path,
        "run",
        toml,
        "--set",
        "federation.workers=2",
        "--out",
        "out",
        "--resume",
        "--quiet",
    )
    assert code == 0, stderr


def test_resume_of_an_interrupted_run_with_other_workers_gives_the_uninterrupted_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the uninterrupted run, and the same run stopped once its rounds are checkpointed
    toml = _experiment(tmp_path, federation={"rounds": 2})
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "whole", "--quiet")[0] == 0

    def stopped(*args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(runner, "finish_run", stopped)
        assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 130
    # Execute
    code, stderr = _cli(
        monkeypatch, capsys, tmp_path, "run", toml, "--set", "federation.workers=2", "--out", "out", "--resume"
    )
    # Assert
    assert code == 0, stderr
    whole, resumed = (json.loads((tmp_path / name / "summary.json").read_text())["rows"] for name in ("whole", "out"))
    for row in (*whole, *resumed):
        row.pop("wall_time_s")
    assert resumed == whole


def test_overwrite_keeps_the_old_run_when_the_new_one_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a finished run, and a new run that fails in its first round
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 0
    before = _snapshot(tmp_path / "out")

    def failing(self: object, resume: bool = False, **_: object) -> None:
        raise FedmosaicError("round 1 failed")

    with monkeypatch.context() as patch:
        patch.setattr(runner.Federation, "run", failing)
        # Execute
        code, stderr = _cli(
            monkeypatch, capsys, tmp_path, "run", toml, "--seed", "3", "--out", "out", "--overwrite", "--quiet"
        )
    # Assert: the old run is intact and nothing of the new one is left
    assert code == 2
    _one_line(stderr, "error: round 1 failed")
    assert _snapshot(tmp_path / "out") == before


def test_overwrite_replaces_the_old_run_once_the_new_one_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 0
    (tmp_path / "out" / "notes.txt").write_text("mine")
    code, stderr = _cli(
        monkeypatch, capsys, tmp_path, "run", toml, "--seed", "3", "--out", "out", "--overwrite", "--quiet"
    )
    assert code == 0, stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["seed"] == 3
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")) == [".fedmosaic.lock"]


# --- bounds: every number that sizes memory, threads, rounds or noise is refused out of range, before any round ---


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--set", "train.dp_noise_multiplier=inf"], "train.dp_noise_multiplier: input should be a finite number"),
        (
            ["--set", "privacy.target_epsilon=1e300"],
            "privacy.target_epsilon: input should be less than or equal to 100",
        ),
        (["--set", "privacy.target_epsilon=inf"], "privacy.target_epsilon: input should be a finite number"),
        (["--set", "privacy.target_epsilon=1e-6"], "privacy.target_epsilon: input should be greater than or equal to"),
        (
            ["--set", "privacy.target_epsilon=0.01", "--set", "federation.rounds=1000"],
            "privacy.target_epsilon: no noise spends only 0.01 over 1000 rounds",
        ),
        (["--set", "federation.rounds=9223372036854775807"], "federation.rounds: input should be less than or equal"),
        (["--seed", "4294967296"], "seed: input should be less than or equal to 4294967295"),
        (["--set", "federation.threads=100000"], "federation.threads: input should be less than or equal to 256"),
        (["--set", "model.hidden=[1000000000]"], "model.hidden.0: input should be less than or equal to 16384"),
        (["--set", "federation.client_memory_mb=inf"], "federation.client_memory_mb: input should be a finite number"),
        (
            ["--set", "privacy.noise_multiplier=1e-300"],
            "privacy.noise_multiplier: must be 0 (off) or from 0.01 to 1000",
        ),
        (["--set", "train.lr=inf"], "train.lr: input should be a finite number"),
        (["--set", "privacy.clip_norm=inf"], "privacy.clip_norm: input should be a finite number"),
        (["--set", "partition.alpha=nan"], "partition.alpha: input should be a finite number"),
        (
            ["--set", "federation.clients_per_round=11"],
            "federation.clients_per_round: must be <= partition.num_clients",
        ),
        (
            ["--set", "federation.arrivals=[{clients = [1], round = 31}]"],
            "federation.arrivals.0.round: must be <= federation.rounds (30), got 31",
        ),
    ],
)
def test_a_number_out_of_range_is_refused_before_anything_is_written(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", "digits-fedavg", *args, "--out", "out", "--quiet")
    assert code == 2
    _one_line(stderr, f"error: {expected}")
    assert not (tmp_path / "out").exists()


# --- inputs that are what they claim: tables, model files, and where predictions go ---


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model folder of :data:`TINY`'s run (64 pixel columns, ten classes), read only."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    run_experiment(load_config(TINY), out)
    return out / "model" / "00-fedavg"


@pytest.fixture
def model(tiny_model: Path, tmp_path: Path) -> Path:
    """A copy of the tiny model folder that the test may spoil."""
    return Path(shutil.copytree(tiny_model, tmp_path / "model"))


def _edit_card(model: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    card = json.loads((model / "card.json").read_text())
    edit(card)
    (model / "card.json").write_text(json.dumps(card))


def _edit_weights(model: Path, edit: Callable[[dict[str, np.ndarray]], None]) -> None:
    arrays = load_file(model / "model.safetensors")
    edit(arrays)
    save_file(arrays, model / "model.safetensors")


@pytest.mark.parametrize(
    ("cells", "expected"),
    [(2, "line 2 has 66 cells, the header 64"), (-1, "line 2 has 63 cells, the header 64")],
)
def test_a_csv_row_with_more_or_fewer_cells_than_its_header_is_refused_naming_the_line(
    cells: int,
    expected: str,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare: the model's own example rows, the first with cells added or removed
    lines = (model / "examples.csv").read_text().splitlines()
    row = lines[1].split(",")
    lines[1] = ",".join(row + ["0"] * cells if cells > 0 else row[:cells])
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "predict", str(model), "rows.csv")
    # Assert
    assert code == 2
    _one_line(stderr, "error: rows.csv: cannot read .csv input (")
    assert expected in stderr


@pytest.mark.parametrize(
    ("spoil_card", "spoil_weights", "expected"),
    [
        (None, lambda a: a["1.weight"].__setitem__((0, 0), np.nan), "tensor '1.weight' holds values that are not"),
        (None, lambda a: a.update(extra=np.zeros(2, np.float32)), "the weights hold tensors the card's architecture"),
        (None, lambda a: a.pop("3.bias"), "the card's architecture names tensors the weights lack: ['3.bias']"),
        (
            lambda c: c["architecture"]["model"].update(hidden=[16]),
            None,
            "tensor '1.weight' is (8, 64) in the weights, (16, 64) by the card's architecture",
        ),
        (lambda c: c["architecture"]["model"].update(hidden=[10**9]), None, "does not describe these weights"),
        (lambda c: c["architecture"].update(input_shape=[1, 10**5, 10**5]), None, "the architecture reads 10000000000"),
        (lambda c: c.update(classes=["a", "b", "c"]), None, "classes lists 3 names, the architecture 10 classes"),
        (lambda c: c.update(fedmosaic_version="banana"), None, "fedmosaic_version 'banana' is not a version"),
        (lambda c: c["inputs"].update(dtype="garbage"), None, "inputs.dtype: expected one of float32, got 'garbage'"),
        (lambda c: c["inputs"].update(scaling="garbage"), None, "inputs.scaling: 'garbage' is none of the scalings"),
        (lambda c: c["inputs"].update(scaling=7), None, "inputs.scaling: 7 is none of the scalings"),
        (lambda c: c.update(architecture="mlp"), None, "architecture: expected a JSON object, got str"),
        (
            lambda c: c["parts"]["model"].update(file="../../../../etc/passwd"),
            None,
            "parts.model.file: must name a file of the model folder",
        ),
    ],
)
def test_a_model_file_that_is_not_what_its_card_claims_is_refused(
    spoil_card: Callable[[dict[str, Any]], None] | None,
    spoil_weights: Callable[[dict[str, np.ndarray]], None] | None,
    expected: str,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if spoil_card is not None:
        _edit_card(model, spoil_card)
    if spoil_weights is not None:
        _edit_weights(model, spoil_weights)
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "predict", str(model), str(model / "examples.csv"))
    assert code == 2
    _one_line(stderr, "error: ")
    assert expected in stderr


def test_a_npy_file_of_a_single_value_is_refused(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "one.npy", np.float32(1.0))
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "predict", str(model), "one.npy")
    assert code == 2
    _one_line(stderr, "error: one.npy: cannot read .npy input (it holds a single value, not rows of examples)")


@pytest.mark.parametrize("target", ["rows.csv", "model/predictions.csv", "model/card.json"])
def test_predict_refuses_to_write_over_its_input_or_into_the_model_folder(
    target: str, model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(model / "examples.csv", tmp_path / "rows.csv")
    before = _snapshot(tmp_path)
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "predict", "model", "rows.csv", "--out", target)
    assert code == 2
    _one_line(stderr, f"error: --out: {target} is ")
    assert _snapshot(tmp_path) == before


# --- one line for every failure a user can cause: unreadable files, unwritable outputs, folders that are not runs ---


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'name = "\xff\xfe"\n', "error: experiment: bad.toml is not UTF-8 text (byte 8): not a TOML file"),
        (bytes(range(256)), "error: experiment: bad.toml is not UTF-8 text (byte 128): not a TOML file"),
        (b"\x00\x01\x02", "error: experiment: bad.toml is not valid TOML"),
    ],
)
def test_a_toml_file_that_is_not_text_is_one_line(
    content: bytes,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "bad.toml").write_bytes(content)
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", "bad.toml")
    assert code == 2
    _one_line(stderr, expected)


@pytest.mark.parametrize("command", ["report", "explore"])
@pytest.mark.parametrize(
    ("prepare", "expected"),
    [
        (lambda folder: folder.write_text("x"), "error: run: a file, not a folder"),
        (lambda folder: (folder.mkdir(), (folder / "results.json").write_text("{}")), "error: malformed run"),
        (lambda folder: (folder.mkdir(), (folder / "results.json").write_bytes(b"\xff")), "error: cannot read run"),
    ],
)
def test_report_and_explore_given_what_is_not_a_run_are_one_line(
    command: str,
    prepare: Callable[[Path], object],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prepare(tmp_path / "run")
    code, stderr = _cli(monkeypatch, capsys, tmp_path, command, "run")
    assert code == 2
    _one_line(stderr, expected)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["run", "tiny.toml", "--quiet", "--out", "file/sub"],
            "error: --out: cannot write in file/sub: Not a directory",
        ),
        (["predict", "model", "rows.csv", "--out", "file/out.csv"], "error: --out: cannot write file/out.csv: "),
    ],
)
def test_an_output_that_cannot_be_written_is_one_line(
    args: list[str],
    expected: str,
    model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare: an output path under a file (unwritable whoever runs the command)
    _experiment(tmp_path)
    shutil.copy(model / "examples.csv", tmp_path / "rows.csv")
    (tmp_path / "file").write_text("not a folder")
    code, stderr = _cli(monkeypatch, capsys, tmp_path, *args)
    assert code == 2
    _one_line(stderr, expected)


def test_a_full_disk_while_checkpointing_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the disk fills up as the first checkpoint is written (the write fails, naming no file)
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    toml = _experiment(tmp_path)
    monkeypatch.setattr(np, "savez", full)
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")
    # Assert: the checkpoint is named, and no partial file is left beside it
    assert code == 2
    _one_line(stderr, "error: out/checkpoints/00-fedavg/federated.npz: No space left on device")
    assert sorted(p.name for p in (tmp_path / "out" / "checkpoints" / "00-fedavg").iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="the superuser writes into read-only folders")
def test_a_report_into_a_read_only_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = _experiment(tmp_path)
    assert _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")[0] == 0
    (tmp_path / "out").chmod(0o555)
    try:
        code, stderr = _cli(monkeypatch, capsys, tmp_path, "report", "out")
    finally:
        (tmp_path / "out").chmod(0o755)
    assert code == 2
    _one_line(stderr, "error: cannot write the report in out: Permission denied")


# --- the explorer: our host names only, bounded bodies, 400 for any bad body ---


@pytest.fixture(scope="module")
def explorer_client(small_fcm_run: Path) -> Iterator[TestClient]:
    with TestClient(create_app(open_run(small_fcm_run)), base_url="http://127.0.0.1:8765") as client:
        yield client


@pytest.mark.xdist_group("small_fcm_run")
@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("[" * 100_000 + "]" * 100_000, 400),
        (b"x" * (MAX_BODY_BYTES + 1), 413),
        (json.dumps({"features": "0" * 32}), 400),
        (json.dumps({"features": [True] * 32}), 400),
        (json.dumps({"features": [0.0] * 32, "set": {"smoke": True}}), 400),
        (b"\xff\xfe", 400),
        (json.dumps({"features": [10**400] + [0.0] * 31}), 400),
        ('{"features": [1e400' + ", 0.0" * 31 + "]}", 400),
        ('{"features": [NaN' + ", 0.0" * 31 + "]}", 400),
    ],
)
def test_the_explorer_refuses_hostile_requests_with_a_client_error(
    explorer_client: TestClient, body: bytes | str, status: int
) -> None:
    response = explorer_client.post("/api/answer", content=body)
    assert response.status_code == status


@pytest.mark.xdist_group("small_fcm_run")
def test_the_explorer_answers_its_own_host_names_only(explorer_client: TestClient) -> None:
    # A page whose own name resolves to 127.0.0.1 (DNS rebinding) sends its name as the Host
    for host in ("127.0.0.1:8765", "localhost:8765"):
        assert explorer_client.get("/api/model", headers={"host": host}).status_code == 200
    for host in ("evil.example:8765", "evil.example", "127.0.0.1.evil.example", "127.0.0.1:8765 ", " localhost"):
        assert explorer_client.get("/api/model", headers={"host": host}).status_code == 400
    twice = [("host", "127.0.0.1:8765"), ("host", "evil.example")]
    assert explorer_client.get("/api/model", headers=twice).status_code == 400


@pytest.mark.xdist_group("small_fcm_run")
def test_the_explorer_answers_its_own_page_only(explorer_client: TestClient) -> None:
    # A page elsewhere posts text/plain (no preflight) to the explorer through the user's browser
    row = explorer_client.get("/api/model").json()["examples"][0]
    body = json.dumps({"features": row, "set": {"smoke": "yes"}})
    own = explorer_client.post("/api/answer", content=body, headers={"origin": "http://127.0.0.1:8765"})
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "http://localhost:8765"):
        refused = explorer_client.post(
            "/api/answer", content=body, headers={"origin": origin, "content-type": "text/plain"}
        )
        assert (refused.status_code, refused.text) == (
            403,
            f"Origin {origin!r} refused: the explorer answers its own page only",
        )
    assert own.status_code == 200


def _raw_request(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return reply


@pytest.mark.xdist_group("small_fcm_run")
def test_the_explorers_server_refuses_absolute_form_targets_and_duplicate_hosts(small_fcm_run: Path) -> None:
    # Prepare: the explorer's own server, on a free port
    served = server(open_run(small_fcm_run))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not served.started:
            time.sleep(0.01)
        try:
            # Execute
            plain = _raw_request(port, b"GET /api/model HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            absolute = _raw_request(
                port, b"GET http://evil.example/api/model HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            twice = _raw_request(
                port, b"GET /api/model HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
            )
        finally:
            served.should_exit = True
            thread.join(timeout=30)
    # Assert
    assert plain.startswith(b"HTTP/1.1 200 ")
    assert absolute.startswith(b"HTTP/1.1 400 ")
    assert absolute.endswith(b"a request target in absolute form is refused: send the path only, with a Host header")
    assert twice.startswith(b"HTTP/1.1 400 ")


# --- every key acts or is refused ---


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["fcm-asia", "--set", "model.kind=cnn"], "model.kind: has no effect on a concepts or vertical task"),
        (["fcm-asia", "--set", "partition.alpha=0.1"], "partition.alpha: has no effect on a concepts or vertical"),
        (["fcm-asia", "--set", "train.momentum=0.9"], "train.momentum: has no effect with train.optimizer = 'adam'"),
        (["fcm-asia", "--set", "data.test_fraction=0.5"], "data.test_fraction: has no effect outside data.dataset"),
        (["digits-fedavg", "--set", "data.network=alarm"], "data.network: has no effect outside data.dataset"),
        (["digits-fedavg", "--set", "data.latent_dim=8"], "data.latent_dim: has no effect outside data.dataset"),
        (["digits-fedavg", "--set", "train.pretrain_epochs=2"], "train.pretrain_epochs: has no effect outside"),
        (["digits-fedavg", "--set", "privacy.clip_norm=2"], "privacy.clip_norm: has no effect without noise"),
        (
            ["digits-fedavg", "--set", "model.channels=[16]"],
            "model.channels: has no effect with model.kind = 'mlp' (it takes model.hidden)",
        ),
        (
            ["fedcfa-table", "--set", "model.hidden=[16]"],
            "model.hidden: has no effect with model.kind = 'cnn' (it takes model.channels)",
        ),
        (
            [
                "digits-fedavg",
                "--set",
                'runs=[{name = "C", method = "fedavg", setting = "centralized"}]',
                "--set",
                "privacy.noise_multiplier=1",
            ],
            "privacy.noise_multiplier: has no effect without a federated run",
        ),
    ],
)
def test_a_key_that_would_have_no_effect_is_refused(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", *args, "--out", "out", "--quiet")
    assert code == 2
    _one_line(stderr, f"error: {expected}")
    assert not (tmp_path / "out").exists()


def test_a_validation_share_that_leaves_no_training_rows_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_examples(tmp_path / "examples")
    args = ["run", "examples/asia/asia.toml", "--set", "tables.val_fraction=0.999", "--out", "out", "--quiet"]
    code, stderr = _cli(monkeypatch, capsys, tmp_path, *args)
    assert code == 2
    _one_line(stderr, "error: tables.val_fraction: input should be less than or equal to 0.5")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("localhost", "error: --superlink: expected HOST:PORT with a port from 1 to 65535, got 'localhost'"),
        ("127.0.0.1:70000", "error: --superlink: expected HOST:PORT with a port from 1 to 65535"),
        (f"127.0.0.1:{free_port()}", "error: --superlink: no SuperLink answers at 127.0.0.1:"),
    ],
    ids=["no-port", "port-out-of-range", "nothing-listening"],
)
def test_a_superlink_that_cannot_be_reached_is_refused_on_one_line_before_anything_is_written(
    address: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", "digits-fedavg", "--superlink", address, "--out", "out")
    assert code == 2
    _one_line(stderr, expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("certificate", "expected"),
    [
        (None, "ca.pem: no such file (the certificate of the authority that signed the SuperLink's)"),
        (b"not a certificate", "ca.pem: not a PEM certificate (no -----BEGIN CERTIFICATE----- block)"),
    ],
    ids=["missing", "not-pem"],
)
def test_a_root_certificate_that_is_missing_or_not_one_is_named_as_such(
    certificate: bytes | None,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare: nothing listens at the address either; the certificate is what is named
    if certificate is not None:
        (tmp_path / "ca.pem").write_bytes(certificate)
    address = f"127.0.0.1:{free_port()}"
    # Execute
    code, stderr = _cli(
        monkeypatch, capsys, tmp_path, "run", "digits-fedavg", "--superlink", address, "--root-certificates", "ca.pem"
    )
    # Assert
    assert code == 2
    _one_line(stderr, f"error: --root-certificates: {tmp_path / expected}")
    assert not (tmp_path / "out").exists()


# --- no result without a signal: one class to learn, or no round trained ---


def _one_class_concepts(folder: Path) -> str:
    """The asia example with every site's task label 'yes'."""
    for site in folder.glob("asia/hospital-[0-9].csv"):
        header, *rows = site.read_text().splitlines()
        task = header.split(",").index("dysp")
        cells = [row.split(",") for row in rows]
        for row in cells:
            row[task] = "yes" if row[task] else ""
        site.write_text("\n".join([header, *map(",".join, cells)]) + "\n")
    return "asia/asia.toml"


def _one_class_vertical(folder: Path) -> str:
    """The vertical example with every diagnosis 'benign'."""
    clinic = folder / "vertical" / "clinic.csv"
    clinic.write_text(clinic.read_text().replace(",malignant\n", ",benign\n"))
    return "vertical/vertical.toml"


def _one_class_horizontal(folder: Path) -> str:
    """Two sites and a test table of the clinic's rows (without their IDs), every diagnosis 'benign' at the sites."""
    lines = [line.split(",", 1)[1] for line in (folder / "vertical" / "clinic.csv").read_text().splitlines()]
    header, rows = lines[0], lines[1:]
    for k, site in enumerate([rows[:150], rows[150:300]]):
        benign = [row.replace(",malignant", ",benign") for row in site]
        (folder / f"site-{k}.csv").write_text("\n".join([header, *benign]) + "\n")
    (folder / "test.csv").write_text("\n".join([header, *rows[300:]]) + "\n")
    tables = {
        "kind": "horizontal",
        "features": header.split(",")[:-1],
        "label": "diagnosis",
        "classes": ["benign", "malignant"],
        "test": "test.csv",
        "sites": [{"file": "site-0.csv"}, {"file": "site-1.csv"}],
    }
    (folder / "horizontal.toml").write_text(
        tomli_w.dumps({**TINY, "name": "one-class", "partition": {}, "tables": tables})
    )
    return "horizontal.toml"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            _one_class_horizontal,
            "error: tables.sites: the sites' labels hold one class ('benign') of benign, malignant:",
        ),
        (
            _one_class_concepts,
            "error: tables.sites: the sites' labels of the task 'dysp' hold one class ('yes') of no, yes",
        ),
        (
            _one_class_vertical,
            "error: tables.parties.0.file: the active party's labels (column 'diagnosis') hold one class ('benign')",
        ),
    ],
    ids=["horizontal", "concepts", "vertical"],
)
def test_a_task_whose_labels_hold_one_class_is_refused_before_anything_is_written(
    make: Callable[[Path], str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare: the examples' tables, their labels changed to one class
    copy_examples(tmp_path)
    experiment = make(tmp_path)
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", experiment, "--out", "out", "--quiet")
    # Assert
    assert code == 2
    _one_line(stderr, expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ("federation.max_reply_bytes=1", "round 1: 0 valid replies (3 rejected) < min_replies 1"),
        ("federation.dropout=0.999999", "round 1: 0 valid replies < min_replies 1"),
    ],
)
def test_a_run_in_which_every_round_was_skipped_has_no_result_and_leaves_nothing(
    setting: str, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    toml = _experiment(tmp_path, federation={"rounds": 2})
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", toml, "--set", setting, "--out", "out", "--quiet")
    # Assert: the error is the last line (each rejected reply is logged above it as it happens)
    assert code == 2
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: run 'FedAvg' trained no round (2 of 2 skipped; {reason}): it has no result to report"]
    assert stderr.splitlines()[-1] == errors[0]
    assert "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_a_run_that_failed_to_train_keeps_the_folder_of_the_run_it_did_not_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: a finished run, then the same folder overwritten by a run whose every reply is refused
    command = ["run", _experiment(tmp_path), "--out", "out", "--quiet"]
    assert _cli(monkeypatch, capsys, tmp_path, *command)[0] == 0
    before = _snapshot(tmp_path / "out")
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, *command, "--set", "federation.max_reply_bytes=1", "--overwrite")
    # Assert
    assert code == 2
    assert stderr.splitlines()[-1].startswith("error: run 'FedAvg' trained no round (1 of 1 skipped")
    assert _snapshot(tmp_path / "out") == before


def test_summary_and_report_say_how_many_rounds_trained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: three clients, two replies needed, one client dropping out of some rounds
    toml = _experiment(tmp_path, federation={"rounds": 4, "min_replies": 3, "dropout": 0.3})
    # Execute
    code, stderr = _cli(monkeypatch, capsys, tmp_path, "run", toml, "--out", "out", "--quiet")
    # Assert
    assert code == 0, stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    history = results["runs"][0]["history"]
    trained = sum(row["status"] == "ok" for row in history)
    assert 0 < trained < 4
    row = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"][0]
    assert (row["rounds"], row["rounds_trained"]) == (4, trained)
    assert f"| FedAvg | 4 | {trained} | {4 - trained} |" in (tmp_path / "out" / "report.md").read_text()
