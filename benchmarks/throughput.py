"""Throughput of the paper workloads: this tree against a pinned earlier commit, side by side in one invocation.

Each workload is one run of a preset, cut to a few rounds, started as ``fedmosaic run`` in a fresh
process, with the baseline commit's sources (a ``git worktree``, first on ``PYTHONPATH``) and with this
tree's, one after the other, so both meet the same machine and load; both trees' sources are compiled
to bytecode first, so that neither pays for compiling them. With ``--repeats N`` each workload runs N
times on each tree, the two trees' order alternating from one repeat to the next, and every figure is
the median of its N readings (the readings are kept under ``samples``): one run's seconds vary by 10 to
30% from one invocation to the next on a shared 2-core machine. Per workload it prints the wall seconds
per round (the rounds' own ``wall_time_s``, evaluation included), the process's wall and CPU seconds
(its children, the client workers, included), the ratio baseline / this tree, and the largest
difference of the final metrics (0 where the computation is unchanged; a seed gives the same final
metrics in every repeat).

Concept workloads read their sampled splits from a cache (``FEDMOSAIC_SPLITS_CACHE``) in this tree:
every run of a grid point after the first finds them there. The benchmark measures such a run: it
fills a scratch cache first, in a process of its own whose wall and CPU seconds are reported as
``splits`` (the cost the first run of a point pays once more), then runs the workload.

Usage::

    python benchmarks/throughput.py [--baseline COMMIT] [--only NAME ...] [--repeats N] [--out FILE [--update]]
    python benchmarks/throughput.py --table FILE    # this tree's figures of a written result (docs/performance.md)

``--update`` replaces, in the result ``--out`` names, the rows of the workloads measured now and
keeps the others (so ``--only`` refreshes some rows of ``docs/results/throughput.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import REPO, default_data_dir, emit, machine

BASELINE = "4818de5"
"""The last commit before the throughput work (issue: paper grids in minutes)."""


@dataclass(frozen=True)
class Workload:
    """One run of a preset, cut to a few rounds."""

    name: str
    preset: str
    run: str
    overrides: tuple[str, ...]


def _fcm(network: str, family: str, rounds: int) -> Workload:
    run = f'{{name = "F-CMs", method = "fcm", params = {{ patience = 15, model = {{ family = "{family}" }} }} }}'
    return Workload(
        f"fcm-{network}-{family}", f"fcm-{network}", run, (f"federation.rounds={rounds}", "federation.workers=1")
    )


WORKLOADS = (
    _fcm("hailfinder", "cgm", 25),
    _fcm("hailfinder", "c2bm", 25),
    _fcm("alarm", "cgm", 25),
    _fcm("alarm", "c2bm", 25),
    Workload(
        "false-vfl-isolet",
        "vfl-isolet",
        '{name = "FALSE-VFL", method = "false-vfl", params = { stage1_rounds = 4, stage1_passes = 2 } }',
        ("federation.rounds=8", "federation.evaluate_every=4"),
    ),
    Workload(
        "false-vfl-fashion-snis1000",
        "vfl-isolet",
        '{name = "FALSE-VFL", method = "false-vfl", params = { stage1_rounds = 2, stage1_passes = 1, predict_samples = 1000 } }',
        (
            'data.dataset="fashion-mnist"',
            "vertical.num_parties=4",
            'vertical.split="patches"',
            "vertical.label_budget=1000",
            'vertical.test_missing=["mcar:0.5"]',
            "federation.rounds=4",
            "federation.evaluate_every=4",
        ),
    ),
    Workload(
        "laser-vfl-isolet",
        "vfl-isolet",
        '{name = "LASER-VFL", method = "laser-vfl", params = { passes = 5 } }',
        ("federation.rounds=8", "federation.evaluate_every=4"),
    ),
    Workload(
        "fedcfa-simpson",
        "fedcfa-simpson",
        '{name = "FedCFA", method = "fedcfa"}',
        ("federation.rounds=10", "federation.target_accuracy=1.0"),
    ),
)


PREPARE = """
import sys
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.workloads import prepare_workload
overrides = sys.argv[2:]
prepare_workload(load_config(apply_overrides(resolve_experiment(sys.argv[1]), overrides)), data_dir=None)
"""
"""Prepares a workload (and so fills the splits cache) in a process of its own: preset, then overrides."""


def _timed(command: list[str], env: dict[str, str], what: str) -> tuple[float, float]:
    """Run ``command``; its wall and CPU seconds (its children included). Exits with its last error line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{what} failed: {result.stderr.strip().splitlines()[-1:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_once(workload: Workload, sources: Path, data_dir: Path, folder: Path) -> dict[str, Any]:
    """Run ``workload`` with the fedmosaic of ``sources``; its timings and final metrics.

    A tree with the splits cache has it filled first (timed as ``splits``) in ``folder``'s own cache.
    """
    overrides = (f"runs=[{workload.run}]", *workload.overrides)
    env = {**os.environ, "PYTHONPATH": str(sources / "src"), "FEDMOSAIC_DATA": str(data_dir)}
    timings: dict[str, Any] = {}
    if (sources / "src" / "fedmosaic" / "data" / "splits_cache.py").exists() and workload.preset.startswith("fcm-"):
        env["FEDMOSAIC_SPLITS_CACHE"] = str(folder.with_name(folder.name + "-splits"))
        wall, cpu = _timed([sys.executable, "-c", PREPARE, workload.preset, *overrides], env, f"{workload.name} splits")
        timings["splits"] = {"wall_s": wall, "cpu_s": cpu}
    command = [sys.executable, "-c", "from fedmosaic.cli import main; main()", "run", workload.preset]
    for override in overrides:
        command += ["--set", override]
    command += ["--out", str(folder), "--data-dir", str(data_dir), "--quiet", "--overwrite"]
    wall, cpu = _timed(command, env, f"{workload.name} with {sources}")
    run = json.loads((folder / "results.json").read_text())["runs"][0]
    rounds = [row["wall_time_s"] for row in run["history"]]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        **timings,
        "rounds": len(rounds),
        "round_wall_s": sum(rounds) / len(rounds),
        "final": {k: v for k, v in run["final"].items() if isinstance(v, float)},
    }


def measure(workload: Workload, trees: dict[str, Path], data_dir: Path, scratch: Path, repeats: int) -> dict[str, Any]:
    """``workload`` run ``repeats`` times on each of ``trees`` (baseline first, then this tree, alternating).

    Each tree's figures are the medians of its readings, which are kept under ``samples``; its final
    metrics are its first run's (the others' are checked equal: the same seed gives the same numbers).
    """
    readings: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for repeat in range(repeats):
        order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
        for name in order:
            reading = run_once(workload, trees[name], data_dir, scratch / f"{workload.name}-{name}-{repeat}")
            if readings[name] and reading["final"] != readings[name][0]["final"]:
                raise SystemExit(f"{workload.name} on the {name} tree: repeat {repeat} changed the final metrics")
            readings[name].append(reading)
    return {name: _median(rows) for name, rows in readings.items()}


def _median(readings: list[dict[str, Any]]) -> dict[str, Any]:
    """One tree's medians over its ``readings`` of a workload, the readings themselves under ``samples``.

    Examples
    --------
    >>> rows = [{"wall_s": w, "cpu_s": 1.0, "round_wall_s": 0.5, "rounds": 2, "final": {}} for w in (3.0, 1.0, 2.0)]
    >>> _median(rows)["wall_s"], len(_median(rows)["samples"])
    (2.0, 3)
    """
    timed = ("wall_s", "cpu_s", "round_wall_s")
    result = {**readings[0], **{key: statistics.median(r[key] for r in readings) for key in timed}}
    if "splits" in readings[0]:
        result["splits"] = {key: statistics.median(r["splits"][key] for r in readings) for key in ("wall_s", "cpu_s")}
    result["samples"] = [{key: r[key] for key in (*timed, "splits") if key in r} for r in readings]
    return result


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """Ratios baseline / current and the largest difference of a shared final metric."""
    shared = sorted(set(baseline["final"]) & set(current["final"]))
    return {
        "round_speedup": baseline["round_wall_s"] / current["round_wall_s"],
        "wall_speedup": baseline["wall_s"] / current["wall_s"],
        "cpu_speedup": baseline["cpu_s"] / current["cpu_s"],
        "largest_metric_difference": max(
            (abs(baseline["final"][k] - current["final"][k]) for k in shared), default=0.0
        ),
        "accuracy": {"baseline": baseline["final"].get("accuracy"), "current": current["final"].get("accuracy")},
    }


def outside_rounds(reading: dict[str, Any]) -> float:
    """Wall seconds of a run spent outside its rounds: start-up, data, report (the run's wall less its rounds').

    Examples
    --------
    >>> outside_rounds({"wall_s": 11.0, "rounds": 10, "round_wall_s": 0.5})
    6.0
    """
    return float(reading["wall_s"] - reading["rounds"] * reading["round_wall_s"])


def markdown_table(document: dict[str, Any]) -> str:
    """The table of ``docs/performance.md`` from a result this script wrote: this tree's figures (medians).

    The baseline tree's readings stay in the result, for comparing a change; the page states today's figures.
    """
    lines = [
        "| workload | s per round | run wall s | outside the rounds s | CPU s | splits CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for row in document["workloads"]:
        current = row["current"]
        splits = f"{current['splits']['cpu_s']:.1f}" if "splits" in current else "—"
        lines.append(
            f"| {row['workload']} ({current['rounds']} rounds) | {current['round_wall_s']:.2f}"
            f" | {current['wall_s']:.1f} | {outside_rounds(current):.1f} | {current['cpu_s']:.1f} | {splits} |"
        )
    return "\n".join(lines)


def updated(document: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``document`` with its rows of the workloads in ``rows`` replaced by those (in place), new ones appended.

    Examples
    --------
    >>> old = {"workloads": [{"workload": "a", "x": 1}, {"workload": "b", "x": 1}]}
    >>> [row["x"] for row in updated(old, [{"workload": "b", "x": 2}])["workloads"]]
    [1, 2]
    """
    fresh = {row["workload"]: row for row in rows}
    kept = [fresh.pop(row["workload"], row) for row in document["workloads"]]
    return {**document, "workloads": kept + list(fresh.values())}


def main() -> None:
    """Measure the chosen workloads on both trees and print the comparison as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"commit to compare against (default {BASELINE})")
    parser.add_argument("--only", nargs="*", default=None, help="workload names (default: all)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each workload on each tree (medians)")
    parser.add_argument("--table", type=Path, default=None, help="print this result file as a Markdown table")
    parser.add_argument(
        "--update", action="store_true", help="with --out: replace only the measured workloads' rows of that file"
    )
    args = parser.parse_args()
    if args.table is not None:
        print(markdown_table(json.loads(args.table.read_text())))
        return
    chosen = [w for w in WORKLOADS if args.only is None or w.name in args.only]
    if not chosen:
        parser.error(f"--only: none of {args.only} is a workload; choose from {[w.name for w in WORKLOADS]}")
    if args.repeats < 1:
        parser.error(f"--repeats: expected a count of at least 1, got {args.repeats}")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "baseline"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), args.baseline],
            check=True,
            stdout=sys.stderr,
        )
        try:
            trees = {"baseline": tree, "current": REPO}
            for sources in trees.values():
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(sources / "src")], check=True)
            for workload in chosen:
                print(f"{workload.name} ...", file=sys.stderr, flush=True)
                medians = measure(workload, trees, args.data_dir, Path(scratch), args.repeats)
                rows.append({"workload": workload.name, **medians, **compare(medians["baseline"], medians["current"])})
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    workloads = rows
    if args.update and args.out is not None and args.out.exists():
        workloads = updated(json.loads(args.out.read_text()), rows)["workloads"]
    emit(
        {
            "benchmark": "throughput",
            "baseline": args.baseline,
            "repeats": args.repeats,
            "workloads": workloads,
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
