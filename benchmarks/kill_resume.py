"""Kill-and-resume trials: SIGKILL a real run at random moments, resume it, compare with an uninterrupted run.

Runs a small experiment (digits, 4 clients, FedAvg and NaiveMix combined
with a trimmed mean, the message audit on) once without
interruption as the reference, then for each trial starts the same run as a
separate process, waits until its message audit holds a random number of
the reference's messages (uniform over all of them, so every kill lands
while the rounds run), waits a further 0-50 ms (to land inside exchanges,
training and checkpoint writes alike), kills it with SIGKILL, resumes it with
``--resume`` until it finishes, and compares ``results.json`` (without wall
times) and the message audit with the reference's.

Usage: python benchmarks/kill_resume.py [--trials 20] [--seed 0] [--work DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w
from _common import REPO, emit, machine

EXPERIMENT: dict[str, Any] = {
    "name": "kill-resume",
    "seed": 2,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 4, "alpha": 1.0, "min_size": 20},
    "federation": {"rounds": 12, "audit": True},
    "model": {"hidden": [16]},
    "aggregation": {"rule": "trimmed-mean", "trim": 0.25},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "NaiveMix", "method": "naivemix", "params": {"mean_batch": 20}},
    ],
}


def start(work: Path, out: str, *, resume: bool) -> subprocess.Popen:
    """The CLI running the experiment into ``work/out`` as a separate process."""
    command = [
        sys.executable,
        "-c",
        "from fedmosaic.cli import main; main()",
        "run",
        "exp.toml",
        "--out",
        out,
        "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [*command, *(["--resume"] if resume else [])],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(work: Path, out: str, *, resume: bool) -> None:
    """Run (or resume) to the end; raise with the CLI's error if it fails."""
    process = start(work, out, resume=resume)
    _, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"fedmosaic run failed ({process.returncode}): {err.decode().strip()}")


def messages(folder: Path) -> int:
    """Messages logged so far in a run's audit."""
    return sum(p.read_text().count("\n") for p in (folder / "messages").glob("*.jsonl"))


def until_messages(process: subprocess.Popen, folder: Path, count: int) -> None:
    """Wait until ``count`` messages are logged in ``folder`` (or the process has ended)."""
    while process.poll() is None and messages(folder) < count:
        time.sleep(0.002)


def outcome(folder: Path) -> dict[str, Any]:
    """What must not depend on interruptions: results without wall times, and the message logs."""
    results = json.loads((folder / "results.json").read_text())
    for run in results["runs"]:
        run.pop("wall_time_s")
        for row in run["history"]:
            row.pop("wall_time_s")
    logs = {p.name: p.read_text() for p in sorted((folder / "messages").glob("*.jsonl"))}
    return {"results": results, "messages": logs}


def trial(work: Path, index: int, after: int, delay: float, reference: dict[str, Any]) -> dict[str, Any]:
    """One kill ``delay`` seconds after ``after`` messages, resumes until finished, and the comparison."""
    out = f"trial-{index:02d}"
    process = start(work, out, resume=False)
    until_messages(process, work / out, after)
    time.sleep(delay)
    killed = process.poll() is None
    if killed:
        process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoints = (
        sorted(str(p.relative_to(work / out)) for p in (work / out).rglob("*.npz")) if (work / out).exists() else []
    )
    finish(work, out, resume=True)
    same = outcome(work / out) == reference
    return {
        "after_messages": after,
        "delay_s": round(delay, 3),
        "killed": killed,
        "checkpoints_at_kill": checkpoints,
        "identical": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kill-resume-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "exp.toml").write_text(tomli_w.dumps(EXPERIMENT))
    finish(work, "reference", resume=False)
    reference = outcome(work / "reference")
    total = messages(work / "reference")
    rng = np.random.default_rng(args.seed)
    points = [(int(rng.integers(1, total)), float(rng.uniform(0.0, 0.05))) for _ in range(args.trials)]
    trials = [trial(work, i, after, delay, reference) for i, (after, delay) in enumerate(points)]
    emit(
        {
            "benchmark": "kill_resume",
            "experiment": EXPERIMENT,
            "reference_messages": total,
            "trials": len(trials),
            "killed": sum(t["killed"] for t in trials),
            "identical": sum(t["identical"] for t in trials),
            "all_identical": all(t["identical"] for t in trials),
            "details": trials,
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
