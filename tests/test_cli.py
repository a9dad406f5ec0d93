"""The command line: one-line errors with exit code 2, runs, reports, Ctrl-C.

A run killed with SIGKILL and resumed: tests/experiments/test_kill_resume.py.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w
import torch
from typer.testing import CliRunner

from fedmosaic.cli import app, main

FAST = ["--set", "federation.rounds=2", "--set", "model.hidden=[8]", "--set", "partition.num_clients=3"]


def _fedmosaic(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FEDMOSAIC_DATA": str(cwd / "no-data-here")}
    return subprocess.run(
        [sys.executable, "-c", "from fedmosaic.cli import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _main_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: Path, *args: str
) -> tuple[object, str]:
    """The command's entry point called in this process from ``cwd``: its exit code and standard error."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("FEDMOSAIC_DATA", str(cwd / "no-data-here"))
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["run", "digits-fedavg", "--set", "partition.alpah=1"],
            "error: partition.alpah: unknown key; did you mean 'alpha'?",
        ),
        (
            ["run", "digits-fedavg", "--set", "federation.rounds=ten"],
            "error: federation.rounds: input should be a valid integer",
        ),
        (
            ["run", "digits-fedavg", "--set", "partition.alpha=0"],
            "error: partition.alpha: input should be greater than 0",
        ),
        (
            ["run", "digits-fedavg", "--set", "federation.fraction=1.5"],
            "error: federation.fraction: input should be less than or equal to 1",
        ),
        (
            ["run", "digits-fedavg", "--set", "partition.num_clients=5000"],
            "error: partition.num_clients: more clients (5000) than training samples",
        ),
        (
            ["run", "digits-fedavg", "--set", "data.dataset=mnist"],
            "error: data file not found: mnist/train-images-idx3-ubyte.gz",
        ),
        (
            ["run", "digits-fedavgg"],
            "error: experiment: 'digits-fedavgg' is neither a preset nor a .toml file; did you mean 'digits-fedavg'?",
        ),
        (["run", "missing.toml"], "error: experiment: no such file: missing.toml"),
        (["report", "nowhere"], "error: no results.json in nowhere"),
        (
            ["run", "digits-fedavg", "--engine", "ray"],
            "error: federation.engine: input should be 'inprocess', 'flower-simulation' or 'flower'",
        ),
        (["run", "digits-fedavg", "--engine", "flower"], "error: federation.engine: 'flower' runs on a SuperLink"),
        (
            ["run", "digits-fedavg", "--engine", "inprocess", "--superlink", "127.0.0.1:9"],
            "error: --superlink: needs federation.engine = flower",
        ),
        (
            ["deploy", "digits-fedavg", "--nodes", "3"],
            "error: --nodes: must equal the experiment's number of clients (10), got 3",
        ),
        (
            ["deploy", "digits-fedavg", "--poll-interval", "0"],
            "error: --poll-interval: must be seconds from 0.05 to 3 (3 keeps Flower's own waits), got 0.0",
        ),
    ],
)
def test_bad_input_gives_one_line_exit_code_2_and_no_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args, expected: str
) -> None:
    # The command's entry point in this process (one interpreter start for all cases); the next test runs it as a
    # separate process, as a user does.
    out = ["--out", "out"] if args[0] in ("run", "deploy") else []
    code, stderr = _main_in_process(monkeypatch, capsys, tmp_path, *args, *out)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(expected)
    assert "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_bad_input_from_the_command_itself_is_one_line_with_exit_code_2(tmp_path: Path) -> None:
    result = _fedmosaic("run", "digits-fedavg", "--set", "partition.alpah=1", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: partition.alpah: unknown key; did you mean 'alpha'?")
    assert not (tmp_path / "out").exists()


def test_invalid_toml_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.toml").write_text("name = \n")
    code, stderr = _main_in_process(monkeypatch, capsys, tmp_path, "run", "bad.toml")
    assert code == 2
    assert stderr.strip().startswith("error: experiment: bad.toml is not valid TOML")


@pytest.mark.parametrize("name", ["../../elsewhere", "runs/inner", "..", "tab\there"])
def test_an_experiment_name_that_is_a_path_is_refused_before_anything_is_written(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare: the name would be the default output folder runs/<name>
    work = tmp_path / "work"
    work.mkdir()
    (work / "escape.toml").write_text(
        tomli_w.dumps({"name": name, "data": {"dataset": "digits"}, "runs": [{"name": "A", "method": "fedavg"}]})
    )

    # Execute
    code, stderr = _main_in_process(monkeypatch, capsys, work, "run", "escape.toml")

    # Assert
    assert code == 2
    assert stderr.strip().startswith("error: name: must be a plain name, not a path")
    assert len(stderr.strip().splitlines()) == 1
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["escape.toml", "work"]


def test_run_writes_results_and_prints_a_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "digits-fedavg", *FAST, "--out", str(tmp_path / "out"), "--quiet", "--seed", "5"]
    )
    assert result.exit_code == 0, result.output
    assert "FedAvg" in result.output
    assert "Centralized" in result.output
    assert "Task accuracy" in result.output
    assert "Sent (MB)" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 100
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["seed"] == 5
    assert saved["config"]["federation"]["rounds"] == 2


def test_report_regenerates_the_report_from_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    CliRunner().invoke(app, ["run", "digits-fedavg", *FAST, "--out", str(out), "--quiet"])
    (out / "report.html").unlink()
    result = CliRunner().invoke(app, ["report", str(out)])
    assert result.exit_code == 0
    assert (out / "report.html").read_text().count("data:image/png;base64,") >= 3


def test_presets_lists_every_preset_with_its_description() -> None:
    result = CliRunner().invoke(app, ["presets"], terminal_width=200)
    assert result.exit_code == 0
    assert "digits-fedavg" in result.output
    assert "mnist-fedavg" in result.output
    assert "fedprox" in result.output


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _default_ctrl_c() -> None:
    """In the child: Ctrl-C acts by default even if this test process inherited it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_parallel_jobs_and_workers_leaves_no_process_behind(tmp_path: Path) -> None:
    # Prepare: a grid of two points run as two jobs, each federation with two workers.
    experiment = {
        "name": "interrupted",
        "data": {"dataset": "digits"},
        "partition": {"num_clients": 4, "min_size": 20},
        "federation": {"rounds": 500, "workers": 2},
        "model": {"hidden": [8]},
        "runs": [{"name": "FedAvg", "method": "fedavg"}],
        "grid": {"axes": {"seed": [0, 1]}, "rows": "seed", "columns": "seed", "secondary": ""},
    }
    (tmp_path / "grid.toml").write_text(tomli_w.dumps(experiment))
    process = subprocess.Popen(
        [sys.executable, "-c", "from fedmosaic.cli import main; main()", "run", "grid.toml", "--jobs", "2", "--quiet"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        preexec_fn=_default_ctrl_c,
    )
    deadline = time.monotonic() + 120
    while len(_descendants(process.pid)) < 6 and time.monotonic() < deadline:  # 2 jobs x (1 + 2 workers)
        time.sleep(0.1)
    spawned = _descendants(process.pid)
    # Execute: Ctrl-C reaches the whole process group, as from a terminal.
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    # Assert
    assert len(spawned) >= 6
    assert process.returncode != 0
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 60  # the workers exit on their own signal, each at its own pace
    while [pid for pid in spawned if _running(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in spawned if _running(pid)]


def test_a_grid_with_parallel_jobs_shows_one_progress_display_and_its_table(tmp_path: Path) -> None:
    experiment = {
        "name": "jobs",
        "data": {"dataset": "digits"},
        "partition": {"num_clients": 3, "min_size": 20},
        "federation": {"rounds": 2},
        "model": {"hidden": [8]},
        "runs": [{"name": "FedAvg", "method": "fedavg"}, {"name": "Local", "method": "fedavg", "setting": "local"}],
        "grid": {"axes": {"seed": [0, 1]}, "rows": "seed", "columns": "seed", "secondary": ""},
    }
    (tmp_path / "grid.toml").write_text(tomli_w.dumps(experiment))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fedmosaic.cli import main; main()",
            "run",
            "grid.toml",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "120"},
    )
    assert result.returncode == 0, result.stderr
    assert "jobs: accuracy (%)" in result.stdout
    assert (tmp_path / "out" / "results.json").exists()
    assert "2/2 done" in result.stderr
    assert "Traceback" not in result.stderr


NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the device would be accepted")


@NO_CUDA
@pytest.mark.parametrize("command", ["run", "deploy"])
def test_a_device_this_machine_lacks_is_one_line_naming_the_setting_before_anything_is_written(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Execute
    code, stderr = _main_in_process(monkeypatch, capsys, tmp_path, command, "digits-fedavg", "--device", "cuda")

    # Assert
    assert code == 2
    assert (
        stderr
        == "error: train.device: 'cuda' is not available: this machine has no CUDA device (use 'cpu' or 'auto')\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_run_whose_validation_loss_swings_period_2_says_so(tmp_path: Path) -> None:
    # Prepare: cut-down insurance CGM with Adam afresh every round, which swings (tests/methods/concepts/test_regime.py)
    source = {
        "name": "swinging",
        "data": {"dataset": "bnlearn", "network": "insurance", "samples": 2800},
        "concepts": {"num_clients": 6, "initial_clients": 3, "join_round": 2},
        "federation": {"rounds": 18},
        "train": {"epochs": 2, "batch_size": 512, "optimizer": "adam", "lr": 0.01, "optimizer_state": "fresh"},
        "runs": [{"name": "F-CMs", "method": "fcm", "params": {"patience": 0, "model": {"family": "cgm"}}}],
    }
    experiment = tmp_path / "swinging.toml"
    experiment.write_text(tomli_w.dumps(source))

    # Execute
    result = CliRunner().invoke(app, ["run", str(experiment), "--out", str(tmp_path / "out"), "--quiet"])

    # Assert: a warning naming the run on the console, and the same sentence in the report
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: F-CMs: its validation task loss went high and low by turns for ")
    assert "period-2 oscillation" in warnings[0]
    assert 'train.optimizer_state = "kept"' in warnings[0]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Oscillation. F-CMs: its validation task loss went high and low by turns" in report
