"""Start-up cost: what a command pays before it does its work, beside ``python -c "import torch"``.

Two measurements, each side by side with the import of PyTorch in the same
invocation, so that their ratios hold on a machine whose load changes:

- **commands**: ``fedmosaic --help``, ``fedmosaic presets``, a one-line
  configuration error, ``flwr --help`` and ``python -c "import torch"``,
  each a whole process, interleaved round-robin ``--repeats`` times; the
  median wall and CPU (user + system) seconds of each, and its ratios to the
  import of PyTorch;
- **runs**: ``fedmosaic run PRESET --quiet`` for ``digits-fedavg``,
  ``fcm-asia`` and ``fedcfa-simpson``: the process's wall time against the
  sum of its runs' round wall times (``results.json``), what a run costs
  beyond its training.

Usage: python benchmarks/startup.py [--repeats 5] [--runs digits-fedavg fcm-asia fedcfa-simpson]
       [--data-dir DIR] [--out docs/results/startup.json]
       python benchmarks/startup.py --print docs/results/startup.json   (the page's tables, in Markdown)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, default_data_dir, emit, machine

BIN = Path(sys.executable).parent

COMMANDS: dict[str, list[str]] = {
    "fedmosaic --help": ["fedmosaic", "--help"],
    "fedmosaic presets": ["fedmosaic", "presets"],
    "fedmosaic run digits-fedavg --set foo=1 (config error)": ["fedmosaic", "run", "digits-fedavg", "--set", "foo=1"],
    "flwr --help": ["flwr", "--help"],
    'python -c "import torch"': ["python", "-c", "import torch"],
}
"""What is timed, by label: the first word is an executable of this Python's environment."""

ANCHOR = 'python -c "import torch"'
RUNS = ("digits-fedavg", "fcm-asia", "fedcfa-simpson")
TARGETS = {"command_over_torch_import_wall": 0.25, "run_over_rounds_wall": 1.5}
"""The goals: a command at most 0.25x the import of PyTorch; a run at most 1.5x its rounds' time."""


def executable(argv: list[str]) -> list[str]:
    """``argv`` with its first word resolved in this Python's environment (the checkout's source on the path)."""
    found = shutil.which(argv[0], path=str(BIN))
    if found is None:
        raise SystemExit(f"{argv[0]} is not installed beside {sys.executable}")
    return [found, *argv[1:]]


def timed(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, the process and its children) and exit code of one process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    start = time.perf_counter()
    process = subprocess.Popen(executable(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, process.returncode


def commands(repeats: int, work: Path) -> dict[str, Any]:
    """Every command ``repeats`` times, round-robin; medians and ratios to the import of PyTorch."""
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in COMMANDS}
    codes: dict[str, int] = {}
    for _ in range(repeats):
        for label, argv in COMMANDS.items():
            wall, cpu, codes[label] = timed(argv, work)
            samples[label].append((wall, cpu))
    medians = {
        label: {
            "wall_s": statistics.median(w for w, _ in rows),
            "cpu_s": statistics.median(c for _, c in rows),
            "exit_code": codes[label],
        }
        for label, rows in samples.items()
    }
    anchor = medians[ANCHOR]
    for row in medians.values():
        row["wall_vs_torch_import"] = row["wall_s"] / anchor["wall_s"]
        row["cpu_vs_torch_import"] = row["cpu_s"] / anchor["cpu_s"]
    return {"median_of": repeats, "table": medians, "samples": samples}


def run_cost(preset: str, work: Path, data_dir: Path) -> dict[str, Any]:
    """One ``fedmosaic run`` of ``preset``, then one import of PyTorch: the run's wall time against its rounds'."""
    out = work / preset
    wall, cpu, code = timed(
        ["fedmosaic", "run", preset, "--quiet", "--overwrite", "--out", str(out), "--data-dir", str(data_dir)], work
    )
    if code != 0:
        raise SystemExit(f"fedmosaic run {preset} failed with exit code {code}")
    torch_wall, torch_cpu, _ = timed(COMMANDS[ANCHOR], work)
    results = json.loads((out / "results.json").read_text())
    rounds = [row["wall_time_s"] for run in results["runs"] for row in run["history"]]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "rounds": len(rounds),
        "runs": len(results["runs"]),
        "rounds_wall_s": sum(rounds),
        "wall_vs_rounds": wall / sum(rounds),
        "outside_rounds_s": wall - sum(rounds),
        "torch_import_wall_s": torch_wall,
        "torch_import_cpu_s": torch_cpu,
    }


def markdown(document: dict[str, Any]) -> str:
    """The two tables of a result file: the commands beside the import of PyTorch, the runs beside their rounds."""
    lines = [
        f"| command (median of {document['commands']['median_of']}) | wall s | CPU s | wall vs import torch "
        "| CPU vs import torch |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, row in document["commands"]["table"].items():
        command, _, note = label.partition(" (")
        lines.append(
            f"| `{command}`{' (' + note if note else ''} | {row['wall_s']:.2f} | {row['cpu_s']:.2f} | {row['wall_vs_torch_import']:.2f}x "
            f"| {row['cpu_vs_torch_import']:.2f}x |"
        )
    lines += [
        "",
        "| `fedmosaic run` | wall s | CPU s | rounds' wall s, summed | wall vs rounds | import torch beside it, wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for preset, row in document["runs"].items():
        lines.append(
            f"| `{preset}` | {row['wall_s']:.1f} | {row['cpu_s']:.1f} | {row['rounds_wall_s']:.1f} "
            f"({row['rounds']} rounds of {row['runs']} runs) | {row['wall_vs_rounds']:.2f}x "
            f"| {row['torch_import_wall_s']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timings of each command (medians are reported)")
    parser.add_argument("--runs", nargs="*", default=list(RUNS), help="presets whose run cost is measured")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "startup.json")
    parser.add_argument("--print", type=Path, default=None, help="print the tables of a result file and stop")
    args = parser.parse_args()
    if args.print is not None:
        print(markdown(json.loads(args.print.read_text())))
        return
    with tempfile.TemporaryDirectory(prefix="startup-") as folder:
        work = Path(folder)
        table = commands(args.repeats, work)
        runs = {preset: run_cost(preset, work, args.data_dir) for preset in args.runs}
    worst = max(row["wall_vs_torch_import"] for label, row in table["table"].items() if label.startswith("fedmosaic"))
    emit(
        {
            "benchmark": "startup",
            "command": "python benchmarks/startup.py",
            "note": "whole processes on a machine that may be loaded: compare the ratios measured side by side, "
            "not the seconds across invocations",
            "commands": table,
            "runs": runs,
            "targets": TARGETS,
            "worst_command_vs_torch_import_wall": worst,
            "commands_meet_target": worst <= TARGETS["command_over_torch_import_wall"],
            "runs_meet_target": {p: r["wall_vs_rounds"] <= TARGETS["run_over_rounds_wall"] for p, r in runs.items()},
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
