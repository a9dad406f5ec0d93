"""Kill-and-resume trials: SIGKILL a real run at random moments, resume it, compare with an uninterrupted run.

Runs a small experiment (digits, 4 clients, FedAvg and NaiveMix combined
with a trimmed mean, the message audit on) once without
interruption as the reference, then for each trial starts the same run as a
separate process, kills it with SIGKILL after a random delay (uniform over
the reference's duration, process start included, so kills land during
imports, rounds and checkpoint writes alike), resumes it with ``--resume``
until it finishes, and compares ``results.json`` (without wall times) and the
message audit with the reference's.

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
    command = [sys.executable, "-c", "from fedmosaic.cli import main; main()", "run", "exp.toml", "--out", out, "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [*command, *(["--resume"] if resume else [])], cwd=work, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def finish(work: Path, out: str, *, resume: bool) -> None:
    """Run (or resume) to the end; raise with the CLI's error if it fails."""
    process = start(work, out, resume=resume)
    _, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"fedmosaic run failed ({process.returncode}): {err.decode().strip()}")


def outcome(folder: Path) -> dict[str, Any]:
    """What must not depend on interruptions: results without wall times, and the message logs."""
    results = json.loads((folder / "results.json").read_text())
    for run in results["runs"]:
        run.pop("wall_time_s")
        for row in run["history"]:
            row.pop("wall_time_s")
    logs = {p.name: p.read_text() for p in sorted((folder / "messages").glob("*.jsonl"))}
    return {"results": results, "messages": logs}


def trial(work: Path, index: int, delay: float, reference: dict[str, Any]) -> dict[str, Any]:
    """One kill at ``delay`` seconds, resumes until finished, and the comparison."""
    out = f"trial-{index:02d}"
    process = start(work, out, resume=False)
    time.sleep(delay)
    killed = process.poll() is None
    if killed:
        process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoints = sorted(str(p.relative_to(work / out)) for p in (work / out).rglob("*.npz")) if (work / out).exists() else []
    finish(work, out, resume=True)
    same = outcome(work / out) == reference
    return {"delay_s": round(delay, 3), "killed": killed, "checkpoints_at_kill": checkpoints, "identical": same}


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
    began = time.perf_counter()
    finish(work, "reference", resume=False)
    duration = time.perf_counter() - began
    reference = outcome(work / "reference")
    rng = np.random.default_rng(args.seed)
    trials = [trial(work, i, float(rng.uniform(0.0, duration)), reference) for i in range(args.trials)]
    emit(
        {
            "benchmark": "kill_resume",
            "experiment": EXPERIMENT,
            "reference_duration_s": round(duration, 2),
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
