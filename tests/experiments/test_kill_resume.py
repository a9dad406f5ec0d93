"""A real run killed with SIGKILL at random moments resumes to exactly the uninterrupted results.

``benchmarks/kill_resume.py`` runs 20 or more such trials; these are a few,
one of them through a secure round skipped for dropouts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tomli_w

import fedmosaic
from fedmosaic.experiments import outputs
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment

SOURCE = {
    "name": "killed",
    "seed": 4,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "iid", "num_clients": 3, "min_size": 20},
    "federation": {"rounds": 8, "audit": True},
    "model": {"hidden": [8]},
    "aggregation": {"rule": "median"},
    "runs": [{"name": "FedAvg", "method": "fedavg"}],
}
SKIPPED_SECURE_ROUND = SOURCE | {
    "federation": {"rounds": 4, "audit": True, "failures": [{"round": 1, "clients": [0, 1]}]},
    "aggregation": {"secure": True},
}
"""Secure aggregation, round 1 skipped (1 of 3 clients left, the threshold is 2): every kill comes after it."""
SKIPPED_REASON = "secure aggregation: 1 of 3 sampled clients sent keys, fewer than the threshold 2"


def _start(folder: Path, out: str, *resume: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-c",
        "from fedmosaic.cli import main; main()",
        "run",
        "exp.toml",
        "--out",
        out,
        "--quiet",
        *resume,
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(fedmosaic.__file__).resolve().parents[1])}  # this checkout's sources
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _until_first_checkpoint(process: subprocess.Popen, folder: Path) -> None:
    while process.poll() is None and not any((folder / "checkpoints").rglob("*.npz")):
        time.sleep(0.005)


def _outcome(folder: Path) -> tuple[dict, dict[str, str]]:
    results = json.loads((folder / "results.json").read_text())
    for run in results["runs"]:
        run.pop("wall_time_s")
        for row in run["history"]:
            row.pop("wall_time_s")
    return results, {p.name: p.read_text() for p in sorted((folder / "messages").glob("*.jsonl"))}


@pytest.mark.parametrize(
    ("source", "reasons", "trials"),
    [(SOURCE, [""] * 8, 1), (SKIPPED_SECURE_ROUND, [SKIPPED_REASON, "", "", ""], 1)],
    ids=["median", "secure-round-skipped"],
)
def test_sigkill_at_random_moments_then_resume_gives_the_uninterrupted_results(
    source: dict, reasons: list[str], trials: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: the uninterrupted reference, run in process (as the command line runs it, without its report)
    monkeypatch.setattr(outputs, "write_report", lambda results, out_dir: None)
    (tmp_path / "exp.toml").write_text(tomli_w.dumps(source))
    history = run_experiment(load_config(source), tmp_path / "reference")["runs"][0]["history"]
    assert [row["reason"] for row in history] == reasons
    duration = sum(row["wall_time_s"] for row in history[1:])  # from the first checkpoint
    reference = _outcome(tmp_path / "reference")
    delays = np.random.default_rng(11).uniform(0.0, duration, size=trials)

    for index, delay in enumerate(delays):
        # Execute: kill after the delay (wherever the rounds are), then resume to the end.
        process = _start(tmp_path, f"trial-{index}")
        _until_first_checkpoint(process, tmp_path / f"trial-{index}")
        time.sleep(float(delay))
        process.send_signal(signal.SIGKILL)
        process.wait()
        resumed = _start(tmp_path, f"trial-{index}", "--resume")
        _, err = resumed.communicate()

        # Assert
        assert resumed.returncode == 0, err.decode()
        assert _outcome(tmp_path / f"trial-{index}") == reference, f"kill after {delay:.2f} s"
