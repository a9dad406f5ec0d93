"""Print the F-CMs result tables of ``docs/results/fcm.md`` from the committed grid files.

Reads every ``docs/results/fcm-table-<network>.json`` (oracle graphs) and
``docs/results/fcm-learned-*.json`` (learned graphs; one file may hold several
networks), groups the runs by network, run and family, and prints four
Markdown tables: task accuracy (mean ± std over seeds, with coverage), concept
accuracy over the task's ancestors (balanced / plain), the intervention gain
on noisy inputs, and full intervention on clean inputs minus the Bayes-optimal
accuracy. A cell with fewer seeds than the others says how many it has.

Usage::

    python scripts/fcm_tables.py > tables.md
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
NETWORKS = ["asia", "sachs", "alarm", "insurance", "hailfinder"]
FAMILIES = ["cbm", "cem", "cgm", "c2bm"]
RUNS = ["Centralized", "Local", "Static", "F-CMs", "F-CMs (learned graphs)"]
FAMILY_KEY = "runs.*.params.model.family"

Runs = dict[tuple[str, str, str], list[dict[str, Any]]]


def load_runs(folder: Path = RESULTS) -> Runs:
    """Every run of the committed F-CMs grids, keyed by (network, run name, family).

    Parameters
    ----------
    folder
        The folder holding the grid files.

    Returns
    -------
    dict
        ``(network, run, family)`` to the list of that cell's runs, one per seed.
    """
    runs: Runs = defaultdict(list)
    for path in sorted([*folder.glob("fcm-table-*.json"), *folder.glob("fcm-learned-*.json")]):
        if path.name.startswith("fcm-table-clean"):
            continue
        for point in json.loads(path.read_text(encoding="utf-8"))["points"]:
            values = point["values"]
            for run in point["runs"]:
                runs[(values["data.network"], run["name"], values[FAMILY_KEY])].append(run)
    return runs


def _task_cell(cell: list[dict[str, Any]]) -> str:
    accuracy = [run["accuracy"] for run in cell]
    coverage = np.mean([run["coverage"] for run in cell])
    return f"{100 * np.mean(accuracy):.1f} ± {100 * np.std(accuracy):.1f} ({100 * coverage:.0f}%)"


def _concept_cell(cell: list[dict[str, Any]]) -> str:
    balanced = np.mean([run["balanced_concept_accuracy"] for run in cell])
    plain = np.mean([run["concept_accuracy"] for run in cell])
    return f"{100 * balanced:.1f} / {100 * plain:.1f}"


def _gain_cell(cell: list[dict[str, Any]]) -> str:
    before = np.mean([run["noisy_accuracy"] for run in cell])
    after = np.mean([run["noisy_full_intervention_accuracy"] for run in cell])
    return f"{100 * (after - before):+.1f} ({100 * before:.1f} → {100 * after:.1f})"


def _ceiling_cell(cell: list[dict[str, Any]]) -> str:
    gaps = [run["full_intervention_accuracy"] - run["bayes_optimal_accuracy"] for run in cell]
    return f"{100 * np.mean(gaps):+.1f} ({100 * min(gaps):+.1f})"


def table(runs: Runs, cell: Callable[[list[dict[str, Any]]], str]) -> str:
    """One Markdown table: a row per (network, run), a column per family.

    Parameters
    ----------
    runs
        What :func:`load_runs` returns.
    cell
        Formats one cell from its runs (one per seed).

    Returns
    -------
    str
        The table; cells with no run read "not run", and cells with fewer seeds
        than the most in the table say how many they have.
    """
    seeds = max((len(cell_runs) for cell_runs in runs.values()), default=0)
    lines = ["| network | run | " + " | ".join(f.upper() for f in FAMILIES) + " |", "|---|---|" + "---|" * 4]
    for network in NETWORKS:
        for name in RUNS:
            cells = [runs.get((network, name, family), []) for family in FAMILIES]
            if not any(cells):
                continue
            shown = [
                "not run" if not c else cell(c) + (f" [{len(c)} seed{'s' * (len(c) > 1)}]" if len(c) < seeds else "")
                for c in cells
            ]
            lines.append(f"| {network} | {name} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def ceilings(runs: Runs) -> str:
    """The Bayes-optimal accuracy of each network's test splits, mean over the centralized runs, in percent."""
    parts = []
    for network in NETWORKS:
        values = [run["bayes_optimal_accuracy"] for f in FAMILIES for run in runs.get((network, "Centralized", f), [])]
        if values:
            parts.append(f"{network} {100 * np.mean(values):.1f}")
    return ", ".join(parts)


def main() -> None:
    """Print the four tables."""
    runs = load_runs()
    print("Task accuracy in percent, mean ± std over the seeds, with concept coverage in parentheses:\n")
    print(table(runs, _task_cell))
    print(
        "\nConcept accuracy over the task's true ancestors (a concept not predicted counts as wrong), "
        "balanced / plain, in percent; the accuracy over each run's own concepts and their number are in the JSON:\n"
    )
    print(table(runs, _concept_cell))
    print(
        "\nIntervention gain on noisy test inputs (every concept intervened on minus none), in points, "
        "with the two accuracies:\n"
    )
    print(table(runs, _gain_cell))
    print(
        "\nFull intervention on clean test inputs minus the Bayes-optimal accuracy, in points, "
        f"mean over seeds (worst seed). Ceilings: {ceilings(runs)}:\n"
    )
    print(table(runs, _ceiling_cell))


if __name__ == "__main__":
    main()
