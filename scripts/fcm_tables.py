"""Print the F-CMs tables of ``docs/results/fcm.md`` and its studies (``docs/results/fcm/``) from the committed files.

The main table reads ``docs/results/fcm-kept-table-*.json`` (oracle graphs, run as the preset runs
them: each client's optimizer kept across rounds; one file per part) and
``docs/results/fcm-kept-learned-*.json`` (learned graphs; one file may hold several
networks), groups the runs by network, run and family, and prints four
Markdown tables: task accuracy (mean ± std over seeds, with coverage), concept
accuracy over the task's ancestors (balanced / plain), the intervention gain
on noisy inputs, and full intervention on clean inputs minus the Bayes-optimal
accuracy. A cell with fewer seeds than the others says how many it has.

Then the studies: the training regime (``fcm-regime-insurance-*.json`` beside the main
table's insurance CGM runs; hailfinder: the afresh table's files beside
``fcm-regime-hailfinder-kept*.json``; the afresh table, run with a fresh optimizer every
round and without the growth-round rule, ``fcm-table-*.json`` and ``fcm-learned-*.json``,
beside the main table), the selection rules on asia and sachs (``fcm-selection-*.json``), the
reference inputs (``fcm-reference-inputs*.json``), the reference's loss
and coverage options (``fcm-options-alarm.json``) and the client scaling
on asia (``fcm-scaling-asia-<K>.json``, and ``-<K>-<part>.json`` for
further seeds) and the parameter change at growth (``fcm-growth-cost.json``), each beside the paper's numbers where
the paper has them.

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

from fedmosaic.data.bayesnet import DEFAULT_SAMPLES

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
NETWORKS = ["asia", "sachs", "alarm", "insurance", "hailfinder"]
FAMILIES = ["cbm", "cem", "cgm", "c2bm"]
RUNS = ["Centralized", "Local", "Static", "F-CMs", "F-CMs (learned graphs)"]
FAMILY_KEY = "runs.*.params.model.family"

Runs = dict[tuple[str, str, str], list[dict[str, Any]]]


MAIN_TABLE_FILES = ("fcm-kept-table-*.json", "fcm-kept-learned-*.json")
"""The main table's grid files, optimizer kept across rounds: oracle graphs and learned graphs."""
AFRESH_TABLE_FILES = ("fcm-table-*.json", "fcm-learned-*.json")
"""The afresh table's grid files: Adam started afresh every round, no growth-round rule."""


def load_runs(folder: Path = RESULTS, patterns: tuple[str, ...] = MAIN_TABLE_FILES) -> Runs:
    """Every run of the committed F-CMs grids, keyed by (network, run name, family).

    Parameters
    ----------
    folder
        The folder holding the grid files.
    patterns
        File name patterns of the grids to read.

    Returns
    -------
    dict
        ``(network, run, family)`` to the list of that cell's runs, one per seed.
    """
    runs: Runs = defaultdict(list)
    for path in sorted({path for pattern in patterns for path in folder.glob(pattern)}):
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


PAPER_MAIN = {
    ("asia", "centralized"): "80.0 / 80.4 / 80.3 (100%)",
    ("asia", "F-CMs"): "80.1 / 80.7 / 80.4 (100%)",
    ("asia", "static"): "63.5 / 72.8 / 70.4 (46.7%)",
    ("asia", "local"): "47.7 / 67.1 / 66.7 (46.7%)",
    ("sachs", "centralized"): "77.3 / 77.3 / 77.9 (100%)",
    ("sachs", "F-CMs"): "75.2 / 75.7 / 76.2 (100%)",
    ("sachs", "static"): "42.2 / 39.9 / 46.5 (56%)",
    ("sachs", "local"): "50.1 / 52.2 / 37.3 (52%)",
    ("alarm", "centralized"): "73.9 / 71.6 / 72.8 (100%)",
    ("alarm", "F-CMs"): "71.0 / 72.8 / 73.3 (100%)",
    ("alarm", "static"): "57.0 / 56.2 / 57.1 (71.3 / 71.3 / 51.3%)",
    ("alarm", "local"): "51.7 / 42.1 / 45.0 (67 / 67 / 50.4%)",
    ("insurance", "centralized"): "76.3 / 76.0 / 74.8 (100%); Bayes ceiling 72.2",
    ("insurance", "F-CMs"): "69.5 / 71.0 / 74.2 (100%)",
    ("insurance", "static"): "58.4 / 67.0 / 60.1 (83.2 / 83.2 / 78.9%)",
    ("insurance", "local"): "30.9 / 40.8 / 22.1 (72.6 / 72.6 / 70.5%)",
}
"""The paper's task accuracy, CBM / CEM / C2BM, with coverage, by (network, run); hailfinder is not in its table."""
PAPER_RUNS = {"centralized": "Centralized", "F-CMs": "F-CMs", "static": "Static", "local": "Local"}
"""The paper's run names and ours."""
PAPER_FAMILIES = ["cbm", "cem", "c2bm"]


def paper_side_by_side_table(runs: Runs, folder: Path = RESULTS) -> str:
    """Task accuracy, CBM / CEM / C2BM, the paper's beside ours (seed means) and ours on clean inputs (seed 0).

    The clean-input runs are read from ``fcm-kept-clean-*.json`` (the main table's regime).
    """
    clean = load_runs(folder, ("fcm-kept-clean-*.json",))
    seeds = max((len(cell) for cell in runs.values()), default=0)
    lines = [
        "| network | run | paper | ours (noise share 0.7) | ours, clean inputs (seed 0; CBM / C2BM) |",
        "|---|---|---|---|---|",
    ]
    for network in NETWORKS:
        for paper_name, name in PAPER_RUNS.items():
            cells = [runs.get((network, name, family), []) for family in PAPER_FAMILIES]
            paper = PAPER_MAIN.get((network, paper_name), "not in the paper's table")
            if not any(cells) and paper.startswith("not"):
                continue
            accuracy = " / ".join(f"{100 * np.mean([r['accuracy'] for r in c]):.1f}" if c else "not run" for c in cells)
            coverage = np.mean([run["coverage"] for c in cells for run in c]) if any(cells) else None
            fewest = min(len(c) for c in cells)
            ours = f"{accuracy} ({100 * coverage:.0f}%)" if coverage is not None else "not run"
            if 0 < fewest < seeds:
                ours += f" [{fewest} seed{'s' * (fewest > 1)}]"
            cleaned = [clean.get((network, name, family), []) for family in ("cbm", "c2bm")]
            on_clean = " / ".join(f"{100 * c[0]['accuracy']:.1f}" for c in cleaned if c) if all(cleaned) else ""
            lines.append(f"| {network} | {paper_name} | {paper} | {ours} | {on_clean} |")
    return "\n".join(lines)


def ceilings(runs: Runs) -> str:
    """The Bayes-optimal accuracy of each network's test splits, mean over the centralized runs, in percent."""
    parts = []
    for network in NETWORKS:
        values = [run["bayes_optimal_accuracy"] for f in FAMILIES for run in runs.get((network, "Centralized", f), [])]
        if values:
            parts.append(f"{network} {100 * np.mean(values):.1f}")
    return ", ".join(parts)


def paper_task(network: str, name: str, family: str) -> float | None:
    """The paper's task accuracy (percent) of a cell of its main table, read from :data:`PAPER_MAIN` (None if absent)."""
    paper_name = {ours: theirs for theirs, ours in PAPER_RUNS.items()}.get(name)
    cell = PAPER_MAIN.get((network, paper_name or ""))
    if cell is None or family not in PAPER_FAMILIES:
        return None
    return float(cell.split(" (")[0].split(" / ")[PAPER_FAMILIES.index(family)])


PAPER_SCALING: dict[tuple[str, int], tuple[float, float]] = {
    ("cbm", 10): (79.91, 91.52),
    ("cbm", 20): (79.25, 91.09),
    ("cbm", 50): (79.54, 90.94),
    ("cbm", 100): (78.32, 90.54),
    ("cem", 10): (80.58, 91.40),
    ("cem", 20): (80.58, 88.59),
    ("cem", 50): (79.92, 87.92),
    ("cem", 100): (78.80, 86.19),
    ("c2bm", 10): (80.14, 91.23),
    ("c2bm", 20): (78.16, 87.81),
    ("c2bm", 50): (80.35, 86.44),
    ("c2bm", 100): (75.38, 86.10),
}
"""The paper's asia client scaling, F-CMs: (task, concept) accuracy in percent by (family, K)."""

SCALING_CLIENTS = (10, 20, 50, 100)
REGIMES = (
    ("fcm-regime-insurance-fresh.json", "Adam afresh each round, batch 512"),
    ("fcm-kept-table-alarm-insurance.json", "Adam kept across rounds, batch 512 (the main table's runs)"),
    ("fcm-regime-insurance-batch64.json", "Adam afresh each round, batch 64"),
)
"""The grid file of each training regime on insurance CGM and how the table names it; the kept regime's runs
are the main table's own, so the two pages show one set of numbers for that cell."""


def grid_points(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (grid values, run) pair of one committed grid file; none if the file is absent."""
    if not path.exists():
        return []
    points = json.loads(path.read_text(encoding="utf-8"))["points"]
    return [(point["values"], run) for point in points for run in point["runs"]]


def _mean(runs: list[dict[str, Any]], key: str, scale: float = 100.0, digits: int = 1) -> str:
    values = [run[key] for run in runs if key in run]
    return f"{scale * np.mean(values):.{digits}f}" if values else "-"


def regime_table(folder: Path = RESULTS) -> str:
    """Insurance CGM under each training regime, per seed: task accuracy, selection loss, alternating rounds."""
    lines = [
        "| regime | run | task accuracy, seeds 0 / 1 / 2 | balanced concept accuracy | "
        "validation task loss of the tested model (mean) | longest alternation (rounds) |",
        "|---|---|---|---|---|---|",
    ]
    for file, label in REGIMES:
        pairs = [
            (values, run)
            for values, run in grid_points(folder / file)
            if values.get("data.network", "insurance") == "insurance" and values.get(FAMILY_KEY, "cgm") == "cgm"
        ]
        for name in ("Centralized", "F-CMs"):
            runs = [run for values, run in sorted(pairs, key=lambda p: p[0]["seed"]) if run["name"] == name]
            if not runs:
                continue
            accuracy = " / ".join(f"{100 * run['accuracy']:.1f}" for run in runs)
            alternation = " / ".join(f"{run['alternating_rounds']:.0f}" for run in runs)
            loss = f"{np.mean([run['selection_loss'] for run in runs]):.3f}"
            balanced = _mean(runs, "balanced_concept_accuracy")
            lines.append(f"| {label} | {name} | {accuracy} | {balanced} | {loss} | {alternation} |")
    return "\n".join(lines)


def hailfinder_regime_table(folder: Path = RESULTS) -> str:
    """Hailfinder, seed 0: each family's runs with Adam afresh each round (the afresh table's) and kept."""
    fresh = [pair for path in sorted(folder.glob("fcm-table-hailfinder*.json")) for pair in grid_points(path)]
    kept = [pair for path in sorted(folder.glob("fcm-regime-hailfinder-kept*.json")) for pair in grid_points(path)]
    lines = [
        "| family | run | task accuracy, afresh / kept | validation task loss of the tested model, afresh / kept | "
        "tested round, afresh / kept | longest alternation, afresh / kept |",
        "|---|---|---|---|---|---|",
    ]

    def cell(pairs: list[tuple[dict[str, Any], dict[str, Any]]], family: str, name: str) -> dict[str, Any] | None:
        found = [
            run for values, run in pairs if values["seed"] == 0 and values[FAMILY_KEY] == family and run["name"] == name
        ]
        return found[0] if found else None

    def show(run: dict[str, Any] | None, key: str, form: str) -> str:
        return form.format(run[key]) if run is not None and key in run else "-"

    columns = (
        ("accuracy", "{:.1%}"),
        ("selection_loss", "{:.3f}"),
        ("best_round", "{:.0f}"),
        ("alternating_rounds", "{:.0f}"),
    )
    for family in FAMILIES:
        for name in ("Centralized", "Static", "F-CMs"):
            pair = cell(fresh, family, name), cell(kept, family, name)
            if pair == (None, None):
                continue
            row = " | ".join(" / ".join(show(run, key, form) for run in pair) for key, form in columns)
            row = row.replace("%", "")  # accuracy in percent, without the sign
            lines.append(f"| {family.upper()} | {name} | {row} |")
    return "\n".join(lines)


def reference_table(folder: Path = RESULTS) -> str:
    """Reference inputs at s = 0.5, without and with the task encoded, beside the paper (mean ± std over the seeds run)."""
    lines = [
        "| network | samples | task in x | family | run | task accuracy | paper | balanced concept accuracy | "
        "probe | Bayes ceiling | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells: dict[tuple[str, int, bool, int, str], list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(folder.glob("fcm-reference-inputs*.json")):
        grid = json.loads(path.read_text(encoding="utf-8"))
        for point in grid["points"]:
            values = point["values"]
            network = values["data.network"]
            samples = int(
                values.get("data.samples") or grid["config"]["data"].get("samples") or DEFAULT_SAMPLES[network]
            )
            family = FAMILIES.index(values[FAMILY_KEY])
            for run in point["runs"]:
                cells[(network, samples, values["data.leak_task"], family, run["name"])].append(run)
    for (network, samples, leak, family, name), runs in sorted(cells.items()):
        paper = paper_task(network, name, FAMILIES[family])
        accuracy = [run["accuracy"] for run in runs]
        spread = f" ± {100 * np.std(accuracy):.1f}" if len(runs) > 1 else ""
        lines.append(
            f"| {network} | {samples:,} | {'yes' if leak else 'no'} | {FAMILIES[family].upper()} | {name} | "
            f"{100 * np.mean(accuracy):.1f}{spread} | "
            f"{'-' if paper is None else f'{paper:.1f}'} | {_mean(runs, 'balanced_concept_accuracy')} | "
            f"{_mean(runs, 'probe_accuracy')} | {_mean(runs, 'bayes_optimal_accuracy')} | {len(runs)} |"
        )
    return "\n".join(lines)


def options_table(folder: Path = RESULTS) -> str:
    """Alarm CBM (seed 0) under the concept loss and client coverage options."""
    lines = [
        "| concept loss | client subsets cover | run | task accuracy | balanced concept accuracy | concepts |",
        "|---|---|---|---|---|---|",
    ]
    pairs = grid_points(folder / "fcm-options-alarm.json")
    for values, run in pairs:
        lines.append(
            f"| {values['runs.*.params.concept_loss']} | {values['concepts.cover']} | {run['name']} | "
            f"{100 * run['accuracy']:.1f} | {100 * run['balanced_concept_accuracy']:.1f} | {run['concepts']:.0f} |"
        )
    return "\n".join(lines)


def scaling_table(folder: Path = RESULTS) -> str:
    """F-CMs on asia with K clients (total samples fixed), task / balanced concept / plain concept accuracy."""
    lines = [
        "| family | K | ours: task | balanced concept | plain concept | paper: task | concept |",
        "|---|---|---|---|---|---|---|",
    ]
    for family in ("cbm", "cem", "c2bm"):
        for clients in SCALING_CLIENTS:
            runs = [
                r
                for path in sorted(folder.glob(f"fcm-scaling-asia-{clients}.json"))
                + sorted(folder.glob(f"fcm-scaling-asia-{clients}-*.json"))
                for v, r in grid_points(path)
                if v[FAMILY_KEY] == family
            ]
            task, concept = PAPER_SCALING[(family, clients)]
            if not runs:
                lines.append(f"| {family.upper()} | {clients} | not run | | | {task:.1f} | {concept:.1f} |")
                continue
            accuracy = [run["accuracy"] for run in runs]
            spread = f"± {100 * np.std(accuracy):.1f}" if len(runs) > 1 else "[1 seed]"
            lines.append(
                f"| {family.upper()} | {clients} | {100 * np.mean(accuracy):.1f} {spread} | "
                f"{_mean(runs, 'balanced_concept_accuracy')} | {_mean(runs, 'concept_accuracy')} | "
                f"{task:.1f} | {concept:.1f} |"
            )
    return "\n".join(lines)


def concept_gap_table(runs: Runs) -> str:
    """F-CMs' balanced concept accuracy minus centralized's, per cell of the main table, in points (mean over seeds)."""
    lines = ["| network | " + " | ".join(f.upper() for f in FAMILIES) + " |", "|---|" + "---|" * 4]
    for network in NETWORKS:
        cells = []
        for family in FAMILIES:
            federated, central = runs.get((network, "F-CMs", family)), runs.get((network, "Centralized", family))
            if not federated or not central:
                cells.append("not run")
                continue
            gap = 100 * (
                np.mean([r["balanced_concept_accuracy"] for r in federated])
                - np.mean([r["balanced_concept_accuracy"] for r in central])
            )
            cells.append(f"{gap:+.1f}" + ("" if gap >= -3 else " (over 3 under)"))
        lines.append(f"| {network} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


Cell = dict[str, list[dict[str, Any]]]
"""Runs of one network and family by run name."""


def _grid_cell(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]], network: str, family: str, names: tuple[str, ...]
) -> Cell:
    """The runs of a grid's (values, run) pairs in one network and family, by run name."""
    found = [run for values, run in pairs if values["data.network"] == network and values[FAMILY_KEY] == family]
    return {name: [run for run in found if run["name"] == name] for name in names}


def _runs_cell(runs: Runs, network: str, family: str, names: tuple[str, ...]) -> Cell:
    """The runs of a loaded table (:func:`load_runs`) in one network and family, by run name."""
    return {name: runs.get((network, name, family), []) for name in names}


def _gap(cell: Cell, metric: str) -> str:
    """F-CMs' seed-mean ``metric`` minus centralized's, in points ("-" without both)."""
    if not cell["F-CMs"] or not cell["Centralized"]:
        return "-"
    federated = np.mean([run[metric] for run in cell["F-CMs"]])
    return f"{100 * (federated - np.mean([run[metric] for run in cell['Centralized']])):+.1f}"


SELECTIONS = (
    ("task", "task loss, p 10"),
    ("task30", "task loss, p 30"),
    ("loss30", "whole loss, p 30"),
)
"""The selection grids on asia and sachs (``fcm-selection-<key>.json``) and how the page names their rule."""


def selection_table(afresh: Runs, folder: Path = RESULTS) -> str:
    """F-CMs minus centralized on asia and sachs under each selection rule: balanced concept and task accuracy.

    The first columns read the afresh table (Adam afresh, the same rule as ``task``, without
    the rule that keeps grown models from selection); every run of a selection grid,
    centralized included, is selected by that grid's rule. Means over seeds.
    """
    grids = {key: grid_points(folder / f"fcm-selection-{key}.json") for key, _ in SELECTIONS}
    labels = ["afresh table", *(label for _, label in SELECTIONS)]
    lines = [
        "| network | family | "
        + " | ".join(f"concept gap, {label}" for label in labels)
        + " | "
        + " | ".join(f"task gap, {label}" for label in labels)
        + " | F-CMs' tested round, "
        + " / ".join(labels)
        + " |",
        "|---|---|" + "---|" * (2 * len(labels) + 1),
    ]
    for network in ("asia", "sachs"):
        for family in FAMILIES:
            names = ("Centralized", "F-CMs")
            cells = [
                _runs_cell(afresh, network, family, names),
                *(_grid_cell(grids[key], network, family, names) for key, _ in SELECTIONS),
            ]
            if not all(cell["Centralized"] and cell["F-CMs"] for cell in cells):
                continue
            gaps = {metric: [_gap(c, metric) for c in cells] for metric in ("balanced_concept_accuracy", "accuracy")}
            rounds = " / ".join(f"{np.mean([r['best_round'] for r in c['F-CMs']]):.0f}" for c in cells)
            lines.append(
                f"| {network} | {family.upper()} | "
                + " | ".join(gaps["balanced_concept_accuracy"])
                + " | "
                + " | ".join(gaps["accuracy"])
                + f" | {rounds} |"
            )
    return "\n".join(lines)


def kept_regime_table(afresh: Runs, kept: Runs, folder: Path = RESULTS) -> str:
    """F-CMs minus centralized: the afresh table, afresh with the growth rule, and the main table (kept).

    Per network and family of the main table: the gap in task and in
    balanced concept accuracy in the afresh table (Adam afresh each round,
    unbatched concept models, no rule against testing a model the round it
    grew), in ``fcm-selection-task.json`` (afresh, with that rule, where that
    grid has the cell) and in the main table (optimizer kept); F-CMs'
    validation task loss of its tested model afresh with the rule / kept (the
    regime's selection criterion); each run's task accuracy in the afresh
    table / the main table; and the longest alternation of the validation task
    loss over the main table's runs (8 rounds make an oscillation). Means over seeds.
    """
    today = grid_points(folder / "fcm-selection-task.json")
    names = ("Centralized", "Local", "Static", "F-CMs")
    lines = [
        "| network | family | task gap, afresh table / afresh with the rule / kept | "
        "concept gap, afresh table / afresh with the rule / kept | "
        "F-CMs' validation task loss, afresh with the rule / kept | "
        + " | ".join(f"{name}, afresh table / kept" for name in names)
        + " | longest alternation, kept |",
        "|---|---|---|---|---|" + "---|" * (len(names) + 1),
    ]

    for network in NETWORKS:
        for family in FAMILIES:
            if not kept.get((network, "F-CMs", family)):
                continue
            cells = [
                _runs_cell(afresh, network, family, names),
                _grid_cell(today, network, family, names),
                _runs_cell(kept, network, family, names),
            ]
            gaps = [
                " / ".join(_gap(cell, metric) for cell in cells) for metric in ("accuracy", "balanced_concept_accuracy")
            ]
            loss = " / ".join(_mean(cells[index]["F-CMs"], "selection_loss", scale=1.0, digits=3) for index in (1, 2))
            accuracies = [" / ".join(_mean(cells[index][name], "accuracy") for index in (0, 2)) for name in names]
            alternation = max(run["alternating_rounds"] for name in names for run in cells[2][name])
            lines.append(
                f"| {network} | {family.upper()} | "
                + " | ".join([*gaps, loss, *accuracies, f"{alternation:.0f}"])
                + " |"
            )
    return "\n".join(lines)


def _concept_records(folder: Path, key: str) -> dict[tuple[str, str, int], dict[str, dict[str, Any]]]:
    """The runs of ``fcm-selection-concepts-<key>.json`` keyed by (network, family, seed), then run name."""
    path = folder / f"fcm-selection-concepts-{key}.json"
    records: dict[tuple[str, str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    if path.exists():
        for run in json.loads(path.read_text(encoding="utf-8"))["runs"]:
            records[(run["network"], run["family"], run["seed"])][run["run"]] = run
    return records


def late_concepts_table(folder: Path = RESULTS) -> str:
    """F-CMs minus centralized per concept, split into the concepts only late clients label and the others.

    Balanced test accuracy of each of the task's true ancestors, in points,
    mean over the concepts and seeds, under each selection rule run.
    """
    lines = [
        "| network | family | concepts only late clients label (per seed) | "
        + " | ".join(f"their gap, {label} | the others' gap, {label}" for _, label in SELECTIONS)
        + " |",
        "|---|---|---|" + "---|---|" * len(SELECTIONS),
    ]
    records = {key: _concept_records(folder, key) for key, _ in SELECTIONS}
    for network in ("asia", "sachs"):
        for family in FAMILIES:
            cells = []
            counts = [
                len(runs["F-CMs"]["late_only"])
                for (net, fam, _seed), runs in sorted(records[SELECTIONS[0][0]].items())
                if (net, fam) == (network, family) and "F-CMs" in runs
            ]
            for key, _ in SELECTIONS:
                late, others = [], []
                for (net, fam, _seed), runs in sorted(records[key].items()):
                    if (net, fam) != (network, family) or not {"Centralized", "F-CMs"} <= set(runs):
                        continue
                    federated, central = runs["F-CMs"], runs["Centralized"]
                    for concept, value in federated["balanced_accuracy"].items():
                        gap = 100 * (value - central["balanced_accuracy"][concept])
                        (late if concept in federated["late_only"] else others).append(gap)
                cells += [f"{np.mean(v):+.1f}" if v else "-" for v in (late, others)]
            if counts:
                per_seed = " / ".join(str(c) for c in counts)
                lines.append(f"| {network} | {family.upper()} | {per_seed} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


AFTER_GROWTH = (1, 5, 10, 20, 30)
"""Rounds after the last growth at which the study reads F-CMs' balanced concept accuracy."""


def after_growth_table(folder: Path = RESULTS, key: str = "loss30") -> str:
    """F-CMs' balanced concept accuracy k rounds after its model last grew, beside the tested model's and centralized's.

    Read from the runs of one selection grid (``key``), whose history
    evaluates the model as trained after each round; a cell averages the
    seeds whose run lasted that long (their number in parentheses when not all).
    """
    lines = [
        "| network | family | "
        + " | ".join(f"{k} round{'s' if k > 1 else ''} after growth" for k in AFTER_GROWTH)
        + " | F-CMs tested | centralized tested |",
        "|---|---|" + "---|" * (len(AFTER_GROWTH) + 2),
    ]
    records = _concept_records(folder, key)
    for network in ("asia", "sachs"):
        for family in FAMILIES:
            runs = [r for (net, fam, _), r in sorted(records.items()) if (net, fam) == (network, family)]
            runs = [r for r in runs if {"Centralized", "F-CMs"} <= set(r)]
            if not runs:
                continue
            cells = []
            for k in AFTER_GROWTH:
                values = []
                for run in runs:
                    federated = run["F-CMs"]
                    # the evaluation after round r sits at index r - 1; k rounds of training after a growth in round g end with round g + k - 1
                    index = max(federated["growth_rounds"], default=1) + k - 2
                    if index < len(federated["balanced_by_round"]):
                        values.append(federated["balanced_by_round"][index])
                shown = f"{100 * np.mean(values):.1f}" if values else "-"
                cells.append(shown + (f" ({len(values)})" if values and len(values) < len(runs) else ""))
            tested = [
                f"{100 * np.mean([run[name]['balanced_concept_accuracy'] for run in runs]):.1f}"
                for name in ("F-CMs", "Centralized")
            ]
            lines.append(f"| {network} | {family.upper()} | " + " | ".join(cells + tested) + " |")
    return "\n".join(lines)


PAPER_GROWTH = {
    "asia": (62.55, 61.30, 32.19, 28.56),
    "sachs": (70.00, 81.11, 43.09, 44.82),
    "alarm": (48.44, 57.30, 45.87, 31.06),
    "insurance": (26.90, 30.44, 19.68, 19.24),
    "hailfinder": (19.24, 17.80, 8.37, 12.73),
}
"""The paper's parameter change ratio at growth, percent, CBM / CEM / CGM / C2BM, by network."""


def growth_cost_table(folder: Path = RESULTS) -> str:
    """F-CMs' parameter change at growth, ours and the paper's definition, beside the paper's ratio.

    Read from ``fcm-growth-cost.json`` (``scripts/fcm_growth_cost.py``); a
    cell averages every growth of the F-CMs runs of the seeds run, in percent.
    """
    path = folder / "fcm-growth-cost.json"
    if not path.exists():
        return "(not measured)"
    growths = [g for g in json.loads(path.read_text(encoding="utf-8"))["growths"] if g["run"] == "F-CMs"]
    lines = [
        "| network | seeds | CBM ours / paper's def. / paper | CEM | CGM | C2BM |",
        "|---|---|---|---|---|---|",
    ]
    for network in NETWORKS:
        cells = []
        for family, paper in zip(FAMILIES, PAPER_GROWTH[network], strict=True):
            cell = [g for g in growths if (g["network"], g["family"]) == (network, family)]
            ours = f"{_mean(cell, 'change_ratio')} / {_mean(cell, 'growth_ratio')}" if cell else "not run"
            cells.append(f"{ours} / {paper:.2f}")
        seeds = sorted({g["seed"] for g in growths if g["network"] == network})
        lines.append(f"| {network} | {', '.join(map(str, seeds)) or '-'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def growth_comparison(folder: Path = RESULTS) -> tuple[int, int]:
    """In how many (network, family) cells the paper's change ratio at growth is above ours (paper's definition)."""
    growths = [
        g
        for g in json.loads((folder / "fcm-growth-cost.json").read_text(encoding="utf-8"))["growths"]
        if g["run"] == "F-CMs"
    ]
    higher = cells = 0
    for network in NETWORKS:
        for family, paper in zip(FAMILIES, PAPER_GROWTH[network], strict=True):
            cell = [100 * g["growth_ratio"] for g in growths if (g["network"], g["family"]) == (network, family)]
            if cell:
                cells += 1
                higher += int(paper > np.mean(cell))
    return higher, cells


TASK_MARGIN = 2.0
"""How far under centralized (points) F-CMs' task accuracy may be; a cell above centralized is within (one-sided)."""
CONCEPT_MARGIN = 3.0
"""How far under centralized (points) F-CMs' balanced concept accuracy may be (one-sided)."""


def _verdict(held: int, cells: int) -> str:
    return "reproduced" if held == cells else "partly" if 2 * held >= cells else "not reproduced"


def _span(percents: list[float]) -> str:
    return f"{min(percents):.0f}-{max(percents):.0f}%" if percents else "not run"


def _differences(runs: Runs, metric: str) -> tuple[list[float], list[float]]:
    """F-CMs minus centralized in points: per cell on the seed means, and per seed-cell (seeds paired by order)."""
    means, seeds = [], []
    for network in NETWORKS:
        for family in FAMILIES:
            ours, central = runs.get((network, "F-CMs", family), []), runs.get((network, "Centralized", family), [])
            if ours and central:
                means.append(100 * (np.mean([r[metric] for r in ours]) - np.mean([r[metric] for r in central])))
                seeds += [100 * (a[metric] - b[metric]) for a, b in zip(ours, central, strict=False)]
    return means, seeds


def verdict_table(runs: Runs) -> str:
    """The claims the main table judges, with our numbers and a verdict, from the main table's runs."""
    task, task_seeds = _differences(runs, "accuracy")
    concept, _ = _differences(runs, "balanced_concept_accuracy")
    task_held = sum(d >= -TASK_MARGIN for d in task)
    concept_held = sum(d >= -CONCEPT_MARGIN for d in concept)
    seed_misses = sum(d < -TASK_MARGIN for d in task_seeds)

    def coverage(name: str) -> list[float]:
        return [100 * np.mean([r["coverage"] for r in runs[key]]) for key in runs if key[1] == name]

    full, static, local = coverage("F-CMs"), coverage("Static"), coverage("Local")
    covered = sum(c >= 99.95 for c in full)
    return "\n".join(
        [
            "| claim (main table, seed means) | paper | ours | verdict |",
            "|---|---|---|---|",
            f"| F-CMs' task accuracy close to the centralized upper bound (here: at most {TASK_MARGIN:.0f} points "
            "under it; above it counts as close) | 1.2 above to 6.8 under (asia to insurance) | "
            f"F-CMs minus centralized {min(task):+.1f} to {max(task):+.1f}; {task_held} of {len(task)} cells close; "
            f"on single seeds {seed_misses} of {len(task_seeds)} seed-cells more than {TASK_MARGIN:.0f} under | "
            f"**{_verdict(task_held, len(task))}** |",
            "| F-CMs covers every concept; static and local cover only their clients' | 100%; static and local "
            f"47-83% | F-CMs 100% in {covered} of {len(full)} cells; static {_span(static)}, "
            f"local {_span(local)} | **{_verdict(covered, len(full))}** |",
            f"| F-CMs' concepts as good as centralized's (here: balanced concept accuracy at most "
            f"{CONCEPT_MARGIN:.0f} points under) | plain accuracy only, 88-91% on asia | "
            f"F-CMs minus centralized {min(concept):+.1f} to {max(concept):+.1f}; {concept_held} of {len(concept)} "
            f"cells close | **{_verdict(concept_held, len(concept))}** |",
        ]
    )


def probes(folder: Path = RESULTS) -> str:
    """The linear probe of the task from the default inputs, per network, in percent."""
    path = folder / "fcm-noise-equivalence.json"
    if not path.exists():
        return "(not measured)"
    accuracy = json.loads(path.read_text(encoding="utf-8"))["default_probe_accuracy"]
    return ", ".join(f"{network} {100 * accuracy[network]:.1f}" for network in NETWORKS)


def equivalence_table(folder: Path = RESULTS, share: float = 0.5) -> str:
    """The unit-scale noise share equal to the reference's ``share`` on its raw latent, per network."""
    path = folder / "fcm-noise-equivalence.json"
    if not path.exists():
        return "(not measured)"
    scales = json.loads(path.read_text(encoding="utf-8"))["latent_std"]
    lines = [
        "| network | raw latent std (concepts) | equivalent share | raw latent std (task encoded too) | equivalent share |",
        "|---|---|---|---|---|",
    ]
    for network in NETWORKS:
        cells = []
        for inputs in ("concepts", "concepts and task"):
            std = scales[network][inputs]
            cells += [f"{std:.2f}", f"{share / (share + (1 - share) * std):.2f}"]
        lines.append(f"| {network} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Print every table."""
    runs = load_runs()
    print("Verdicts of the main table:\n")
    print(verdict_table(runs))
    print("\nTask accuracy in percent, mean ± std over the seeds, with concept coverage in parentheses:\n")
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
    print("\nTask accuracy, CBM / CEM / C2BM (the paper has no CGM column), percent, with coverage:\n")
    print(paper_side_by_side_table(runs))
    print(
        "\nF-CMs' balanced concept accuracy minus centralized's, points (mean over seeds); "
        f"a linear probe of the task from the default inputs (seed 0) reaches: {probes()}:\n"
    )
    print(concept_gap_table(runs))
    afresh = load_runs(patterns=AFRESH_TABLE_FILES)
    print("\nF-CMs minus centralized on asia and sachs under each selection rule, points (mean over seeds):\n")
    print(selection_table(afresh))
    print("\nThe reference's s = 0.5 on the raw latent as a unit-scale noise share:\n")
    print(equivalence_table())
    print("\nTraining regime, insurance CGM:\n")
    print(regime_table())
    print("\nTraining regime, hailfinder, seed 0:\n")
    print(hailfinder_regime_table())
    print("\nThe afresh table and the main table (kept), F-CMs minus centralized (points) and task accuracy (%):\n")
    print(kept_regime_table(afresh, runs))
    print("\nReference inputs (s = 0.5 on the raw latent):\n")
    print(reference_table())
    print("\nThe reference's loss and coverage options, alarm CBM, seed 0:\n")
    print(options_table())
    print("\nClient scaling on asia (F-CMs, total samples fixed), mean ± std over the seeds run:\n")
    print(scaling_table())
    print("\nParameter change at growth, F-CMs, percent (mean over growths and seeds):\n")
    print(growth_cost_table())


if __name__ == "__main__":
    main()
