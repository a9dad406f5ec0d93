"""Which labeled rows each training setting of ``vfl-grid`` leaves, against the test rows.

Labels are drawn among the training rows that hold the active party's block
(``vertical.label_rows = "active"``). Under MNAR the active block goes
missing with a probability that depends on its own values, so the labeled
rows can be a biased sample of the classes. For one dataset and seed, this
prints, per training setting: the total-variation distance between the
labeled rows' class shares and the test rows', the rarest and commonest
class among the labeled rows, the mean number of parties on a labeled row
(and on any training row), and the share of labeled rows every party holds.
It builds the splits exactly as a run of the grid does, and trains nothing.

Usage: python scripts/vfl_label_shift.py [--dataset fashion-mnist] [--seed 0] [--data-dir DATA]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.vertical_workload import prepare_vertical


def grid_data(grid: dict[str, Any], dataset: str, train: str, seed: int, data_dir: str | None) -> VerticalData:
    """The splits of one point of the ``grid`` preset (the training rows and one test setting, MCAR 0)."""
    overrides = [
        f'data.dataset="{dataset}"',
        f'vertical.train_missing="{train}"',
        f"seed={seed}",
        'vertical.test_missing=["mcar:0.0"]',
    ]
    config = load_config(apply_overrides(grid, overrides))
    return prepare_vertical(config, data_dir=data_dir).data


def shift_row(train: str, data: VerticalData) -> str:
    """One table row: how the labeled rows of ``data`` differ from its test rows."""
    labeled = data.train.y >= 0
    shares = np.bincount(data.train.y[labeled], minlength=data.num_classes) / labeled.sum()
    test_y = next(iter(data.tests.values())).y
    test_shares = np.bincount(test_y, minlength=data.num_classes) / len(test_y)
    distance = 0.5 * np.abs(shares - test_shares).sum()
    present = data.train.present
    return (
        f"| {train} | {labeled.sum()} | {distance:.3f} | {100 * shares.min():.1f} (class {shares.argmin()}) "
        f"| {100 * shares.max():.1f} (class {shares.argmax()}) | {present[labeled].sum(axis=1).mean():.2f} "
        f"| {present.sum(axis=1).mean():.2f} | {100 * present[labeled].all(axis=1).mean():.0f} |"
    )


def main() -> None:
    """Print the table for the dataset and seed asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="fashion-mnist", choices=["fashion-mnist", "isolet"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None, help="folder holding the datasets (default: the config's)")
    args = parser.parse_args()
    print(
        "| train | labeled rows | TV to the test labels | rarest class (%) | commonest class (%) "
        "| parties per labeled row | per training row | labeled rows fully aligned (%) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    grid = resolve_experiment("vfl-grid")
    for train in grid["grid"]["axes"]["vertical.train_missing"]:
        print(shift_row(train, grid_data(grid, args.dataset, train, args.seed, args.data_dir)), flush=True)


if __name__ == "__main__":
    main()
