"""Summarise finished points of the vfl-grid preset: cell tally, margins, accuracy by parties present, steps.

Reads the ``points/*/results.json`` of one or more grid output folders (a
point that has not finished has no ``results.json`` and is skipped) and
prints one JSON document with:

- ``points``: per point (dataset, training setting, seed) and run, the final
  test metrics and the selection record (validation rows, selected round,
  optimizer steps);
- ``tally``: for the paper's method (``FALSE-VFL``) and for the option
  (``FALSE-VFL + party subsets``), each compared with the baselines only
  (never with the other FALSE-VFL run), the seed-averaged cells (dataset x
  training setting x paper test setting) where it is best, and its mean
  margin over the best baseline, overall, per test setting and per dataset;
- ``by_parties``: accuracy under KEEP(k) and MCAR 0 (k = K) per run,
  averaged over training settings and seeds, per dataset;
- ``plug_vs_local``: PlugVFL minus Local under MCAR 0 testing per training setting;
- ``steps``: mean optimizer steps and selected round per run and dataset.

With ``--markdown`` it prints, instead, one table per point (accuracy in
percent, the best of each column in bold) for the results document.

Usage: python benchmarks/vfl_grid_summary.py GRID_DIR [GRID_DIR ...] [--out FILE] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

PAPER_METRICS = [
    "accuracy_mcar0",
    "accuracy_mcar2",
    "accuracy_mcar5",
    "accuracy_mar1",
    "accuracy_mar2",
    "accuracy_mnar7",
    "accuracy_mnar9",
]
METHOD, OPTION = "FALSE-VFL", "FALSE-VFL + party subsets"
RECORD = ("validation_rows", "selected_round", "optimizer_steps", "stage1_steps", "classifier_steps", "training_rows")


def load_points(folders: list[Path]) -> list[dict[str, Any]]:
    """Every finished point: its grid values and, per run, final metrics and selection record."""
    points = []
    for folder in folders:
        for results_file in sorted(folder.glob("points/*/results.json")):
            results = json.loads(results_file.read_text())
            config = results["config"]
            runs = {
                run["name"]: {
                    "final": run["final"],
                    "record": {k: run["artifacts"][k] for k in RECORD if k in run["artifacts"]},
                }
                for run in results["runs"]
            }
            points.append(
                {
                    "dataset": config["data"]["dataset"],
                    "train": config["vertical"]["train_missing"],
                    "seed": config["seed"],
                    "runs": runs,
                }
            )
    return points


def cell_means(points: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """Seed-averaged accuracy per (dataset, training setting, metric) and run."""
    values: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for point in points:
        for name, run in point["runs"].items():
            for metric, value in run["final"].items():
                if metric.startswith("accuracy_"):
                    values[(point["dataset"], point["train"], metric)][name].append(value)
    return {cell: {name: statistics.mean(v) for name, v in runs.items()} for cell, runs in values.items()}


def tally(cells: dict[tuple[str, str, str], dict[str, float]], run: str, rivals: set[str]) -> dict[str, Any]:
    """Where ``run`` beats every run of ``rivals`` (seed-averaged, paper test settings), and by how much."""
    rows = []
    for (dataset, train, metric), means in cells.items():
        others = {name: v for name, v in means.items() if name in rivals}
        if metric not in PAPER_METRICS or run not in means or not others:
            continue
        best = max(others, key=others.__getitem__)
        rows.append(
            {
                "dataset": dataset,
                "train": train,
                "metric": metric,
                "margin": 100 * (means[run] - others[best]),
                "best_other": best,
            }
        )

    def summary(selected: list[dict[str, Any]]) -> dict[str, Any]:
        wins = sum(row["margin"] > 0 for row in selected)
        margin = statistics.mean(row["margin"] for row in selected) if selected else None
        return {"cells": len(selected), "best": wins, "mean_margin_points": margin}

    return {
        "overall": summary(rows),
        "by_test": {m: summary([r for r in rows if r["metric"] == m]) for m in PAPER_METRICS},
        "by_train": {t: summary([r for r in rows if r["train"] == t]) for t in sorted({r["train"] for r in rows})},
        "by_dataset": {
            d: summary([r for r in rows if r["dataset"] == d]) for d in sorted({r["dataset"] for r in rows})
        },
        "losses": [r for r in rows if r["margin"] <= 0],
    }


def by_parties(points: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean accuracy (percent) under KEEP(k) and MCAR 0 per dataset and run."""
    values: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for point in points:
        for name, run in point["runs"].items():
            for metric, value in run["final"].items():
                if metric.startswith("accuracy_keep") or metric == "accuracy_mcar0":
                    values[point["dataset"]][name][metric].append(100 * value)
    return {
        d: {n: {m: statistics.mean(v) for m, v in ms.items()} for n, ms in runs.items()} for d, runs in values.items()
    }


def plug_vs_local(cells: dict[tuple[str, str, str], dict[str, float]]) -> list[dict[str, Any]]:
    """PlugVFL minus Local (points) under MCAR 0 testing, per dataset and training setting."""
    return [
        {
            "dataset": d,
            "train": t,
            "plug": 100 * m["PlugVFL"],
            "local": 100 * m["Local"],
            "difference": 100 * (m["PlugVFL"] - m["Local"]),
        }
        for (d, t, metric), m in sorted(cells.items())
        if metric == "accuracy_mcar0" and "PlugVFL" in m and "Local" in m
    ]


def steps(points: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean of each selection record entry per dataset and run."""
    values: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for point in points:
        for name, run in point["runs"].items():
            for key, value in run["record"].items():
                values[point["dataset"]][name][key].append(float(value))
    return {
        d: {n: {k: statistics.mean(v) for k, v in ks.items()} for n, ks in runs.items()} for d, runs in values.items()
    }


def label(metric: str) -> str:
    """``accuracy_mnar9`` -> ``MNAR 9``."""
    name = metric.removeprefix("accuracy_")
    return f"{name.rstrip('0123456789').upper()} {name.lstrip('abcdefghijklmnopqrstuvwxyz')}"


def markdown_tables(points: list[dict[str, Any]]) -> str:
    """One table per point: runs by test settings, percent, the best of each column in bold."""
    parts = []
    for point in points:
        runs = point["runs"]
        metrics = [m for m in next(iter(runs.values()))["final"] if m.startswith("accuracy_")]
        best = {m: max(run["final"][m] for run in runs.values()) for m in metrics}
        lines = [
            f"**{point['dataset']}, train {point['train']}, seed {point['seed']}**",
            "",
            "| run | " + " | ".join(label(m) for m in metrics) + " | selected round | steps |",
            "|---|" + "---|" * (len(metrics) + 2),
        ]
        for name, run in runs.items():
            cells = [
                f"**{100 * run['final'][m]:.1f}**" if run["final"][m] == best[m] else f"{100 * run['final'][m]:.1f}"
                for m in metrics
            ]
            record = run["record"]
            lines.append(
                f"| {name} | "
                + " | ".join(cells)
                + f" | {record.get('selected_round', '')} | {record.get('optimizer_steps', '')} |"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    points = load_points(args.folders)
    if args.markdown:
        print(markdown_tables(points), end="")
        return
    cells = cell_means(points)
    names = {name for point in points for name in point["runs"]}
    baselines = names - {METHOD, OPTION}
    summary = {
        "points": points,
        "tally": {run: tally(cells, run, baselines) for run in (METHOD, OPTION) if run in names},
        "option_vs_method": tally(cells, OPTION, {METHOD}) if {METHOD, OPTION} <= names else None,
        "by_parties": by_parties(points),
        "plug_vs_local": plug_vs_local(cells),
        "steps": steps(points),
    }
    text = json.dumps(summary, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
