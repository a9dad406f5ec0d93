"""F-CMs on the three hospitals' own tables (asia example) against a centralized run on the pooled tables.

Runs the shipped ``asia/asia.toml`` (12 rounds; centralized: the same rows,
concepts and beliefs at one site) for each seed and prints, per seed, the
final task accuracy, concept accuracy and coverage of both runs and their
gap (done when F-CMs reaches coverage 1 within 2 points of centralized).

Usage: python benchmarks/own_data.py [--seeds 0 1 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import emit, machine

from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment

METRICS = ("accuracy", "concept_accuracy", "coverage", "best_round")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        copy_examples(Path(folder))
        source = resolve_experiment(str(Path(folder) / "asia" / "asia.toml"))
        for seed in args.seeds:
            config = load_config(apply_overrides(source, [f"seed={seed}"]))
            results = run_experiment(config, Path(folder) / f"seed-{seed}")
            final = {run["name"]: {k: run["final"][k] for k in METRICS} for run in results["runs"]}
            gap = final["Centralized"]["accuracy"] - final["F-CMs"]["accuracy"]
            rows.append({"seed": seed, "final": final, "gap_points": round(100 * gap, 2)})
    emit(
        {
            "benchmark": "own_data",
            "experiment": "asia/asia.toml (fedmosaic examples)",
            "rows": rows,
            "max_gap_points": max(row["gap_points"] for row in rows),
            "coverage_all_1": all(row["final"]["F-CMs"]["coverage"] == 1.0 for row in rows),
            "config": _relative(config.model_dump(mode="json", exclude_none=True)),
            "machine": machine(),
        },
        args.out,
    )


def _relative(document: dict) -> dict:
    """The configuration with its table files named as in the example folder."""
    tables = document["tables"]
    tables["test"] = Path(tables["test"]).name
    for site in tables["sites"]:
        site.update({k: Path(v).name for k, v in site.items() if k in ("file", "graph") and v})
    return document


if __name__ == "__main__":
    main()
