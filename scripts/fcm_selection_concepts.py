"""Extract from an ``fcm-table`` grid's output folder what the concept-gap study reads.

For every run of every point: its network, family, seed and name, the round
of its tested model, the rounds its model grew, each concept's balanced test
accuracy (over the task's true ancestors), which concepts only clients that
joined after the first round label, the share of clients labeling each
concept, and the balanced concept accuracy of the model after every round
but the last (the history's evaluation of the model as trained so far; the
last round's evaluation is the tested model's). The result is a
small JSON committed beside the grid's ``results.json``; the tables of
``docs/results/fcm/concept-quality.md`` are printed from it by ``scripts/fcm_tables.py``.

Usage::

    python scripts/fcm_selection_concepts.py GRID_OUT docs/results/fcm-selection-concepts-task.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FAMILY_KEY = "runs.*.params.model.family"


def run_record(values: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """What the study needs of one run of a grid point (``values``: the point's grid values)."""
    artifacts = run["artifacts"]
    registry = artifacts["registry"]
    per_concept = artifacts["per_concept"]
    labeled_by = {c: [entry for entry in registry.values() if c in entry["concepts"]] for c in per_concept}
    return {
        "network": values["data.network"],
        "family": values[FAMILY_KEY],
        "seed": values["seed"],
        "run": run["name"],
        "best_round": run["final"]["best_round"],
        "balanced_concept_accuracy": run["final"]["balanced_concept_accuracy"],
        "growth_rounds": [change["round"] for change in artifacts["changes"]],
        "balanced_accuracy": {c: scores["balanced_accuracy"] for c, scores in per_concept.items()},
        "late_only": sorted(
            c for c, entries in labeled_by.items() if entries and all(e["joined"] > 1 for e in entries)
        ),
        "client_share": {c: len(entries) / len(registry) for c, entries in labeled_by.items()},
        "balanced_by_round": [
            round(entry["metrics"]["balanced_concept_accuracy"], 4)
            for entry in run["history"][:-1]
            if "balanced_concept_accuracy" in entry.get("metrics", {})
        ],
    }


def grid_runs(grid_out: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every run of the grid in ``grid_out`` with its point's grid values (its ``results.json`` and its points' own)."""
    grid = json.loads((grid_out / "results.json").read_text(encoding="utf-8"))
    for point in grid["points"]:
        results = json.loads((grid_out / point["folder"] / "results.json").read_text(encoding="utf-8"))
        for run in results["runs"]:
            yield point["values"], run


def extract(grid_out: Path) -> list[dict[str, Any]]:
    """Every run of the grid in ``grid_out``, as the study reads it."""
    return [run_record(values, run) for values, run in grid_runs(grid_out)]


def main() -> None:
    """Write the extraction of the grid folder given first to the file given second."""
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/fcm_selection_concepts.py GRID_OUT OUTPUT.json")
    records = extract(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text(json.dumps({"runs": records}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
