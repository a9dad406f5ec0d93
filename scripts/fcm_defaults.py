"""Print the tables of ``docs/results/fcm/defaults.md`` from its committed files.

Three tables: the ``fcm-insurance`` preset with CGM on seeds 0-2 under F-CMs'
default regime (each client's optimizer kept across rounds) beside the same
runs with Adam started afresh every round (``defaults-insurance-cgm*.json``,
the grids' ``results.json``); the global model's round-to-round steps in
the cut-down case of ``scripts/fcm_restart_swing.py`` (``restart-swing.json``);
and the other single-network presets run over every family under the
default (``defaults-<preset>.json``).

Usage::

    python scripts/fcm_defaults.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = Path(__file__).resolve().parent.parent / "docs" / "results" / "fcm"
PRESET_FILES = {
    "kept across rounds (default)": "defaults-insurance-cgm.json",
    "afresh each round": "defaults-insurance-cgm-fresh.json",
}
"""The regime of each grid file of the ``fcm-insurance`` preset with CGM."""
SWING_FILE = "restart-swing.json"
FAMILY_FILES = {
    "fcm-asia": ("defaults-fcm-asia.json",),
    "fcm-alarm": ("defaults-fcm-alarm-seed0.json", "defaults-fcm-alarm-seeds-1-2.json"),
    "fcm-hailfinder": tuple(f"defaults-fcm-hailfinder-{family}-seed0.json" for family in ("cbm", "cem", "c2bm")),
}
"""The results of each single-network preset run under the default (F-CMs and centralized): grids over
the families, or one experiment's ``results.json`` per family (hailfinder, seed 0; its CGM point was not run)."""
FAMILY_KEY = "runs.*.params.model.family"
PAPER = {
    ("fcm-asia", "cbm"): (80.1, 80.0),
    ("fcm-asia", "cem"): (80.7, 80.4),
    ("fcm-asia", "c2bm"): (80.4, 80.3),
    ("fcm-alarm", "cbm"): (71.0, 73.9),
    ("fcm-alarm", "cem"): (72.8, 71.6),
    ("fcm-alarm", "c2bm"): (73.3, 72.8),
}
"""The paper's task accuracy (F-CMs, centralized) where its main table has the cell (it has no CGM column)."""
TAIL = 6
"""Last rounds over which the swing table averages a run's steps."""


def _load(name: str, folder: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return document


def _runs_by_seed(grid: dict[str, Any]) -> dict[int, dict[str, dict[str, Any]]]:
    """Each seed's runs of a grid file, by run name."""
    return {int(point["values"]["seed"]): {run["name"]: run for run in point["runs"]} for point in grid["points"]}


def preset_table(folder: Path = FOLDER) -> str:
    """``fcm-insurance`` with CGM: F-CMs against centralized per seed and regime, with their validation task losses."""
    header = (
        "Adam | seed | F-CMs task accuracy | Centralized | F-CMs minus centralized (points)"
        " | F-CMs' validation task loss (tested model) | Centralized's | F-CMs' tested round"
        " | F-CMs' longest alternation (rounds)"
    )
    rows: list[tuple[str, ...]] = []
    for regime, name in PRESET_FILES.items():
        seeds = _runs_by_seed(_load(name, folder))
        gaps, losses = [], []
        for seed, runs in sorted(seeds.items()):
            fcm, central = runs["F-CMs"], runs["Centralized"]
            gap = 100 * (fcm["accuracy"] - central["accuracy"])
            gaps.append(gap)
            losses.append(fcm["selection_loss"])
            rows.append(
                (
                    regime,
                    str(seed),
                    f"{100 * fcm['accuracy']:.1f}",
                    f"{100 * central['accuracy']:.1f}",
                    f"{gap:+.1f}",
                    f"{fcm['selection_loss']:.3f}",
                    f"{central['selection_loss']:.3f}",
                    f"{fcm['best_round']:.0f}",
                    f"{fcm['alternating_rounds']:.0f}",
                )
            )
        rows.append((regime, "mean", "", "", f"{np.mean(gaps):+.1f}", f"{np.mean(losses):.3f}", "", "", ""))
    return _markdown(header, rows)


def swing_table(folder: Path = FOLDER) -> str:
    """The cut-down case: how the global model steps from round to round under each regime."""
    header = (
        f"setting | family | Adam | longest alternation (rounds) | step cosine, mean of the last {TAIL}"
        f" | step RMS, mean of the last {TAIL} | validation task loss, lowest / last"
    )
    rows = []
    for row in _load(SWING_FILE, folder)["rows"]:
        cosines = [c for c in row["step_cosine"] if c is not None][-TAIL:]
        rms = [r for r in row["step_rms"] if r is not None][-TAIL:]
        losses = row["val_task_loss"]
        rows.append(
            (
                row["setting"],
                row["family"].upper(),
                row["regime"],
                str(row["alternating_rounds"]),
                f"{np.mean(cosines):+.2f}",
                f"{np.mean(rms):.4f}",
                f"{min(losses):.3f} / {losses[-1]:.3f}",
            )
        )
    return _markdown(header, rows)


def family_table(folder: Path = FOLDER) -> str:
    """Each single-network preset and family: F-CMs against centralized over the seeds run, under the default."""
    header = (
        "preset | family | seeds | F-CMs task accuracy | Centralized | F-CMs minus centralized, mean (per seed)"
        " | longest alternation of any run (rounds) | paper: F-CMs / centralized"
    )
    rows = []
    for preset, names in FAMILY_FILES.items():
        cells: dict[str, list[dict[str, dict[str, Any]]]] = {}
        for family, runs in (cell for name in names for cell in _family_cells(_load(name, folder))):
            cells.setdefault(family, []).append(runs)
        for family, seeds in cells.items():
            fcm = [100 * runs["F-CMs"]["accuracy"] for runs in seeds]
            central = [100 * runs["Centralized"]["accuracy"] for runs in seeds]
            gaps = ", ".join(f"{round(f - c, 1) + 0.0:+.1f}" for f, c in zip(fcm, central, strict=True))
            alternation = max(run["alternating_rounds"] for runs in seeds for run in runs.values())
            paper = PAPER.get((preset, family))
            rows.append(
                (
                    preset,
                    family.upper(),
                    str(len(seeds)),
                    f"{np.mean(fcm):.1f} ± {np.std(fcm):.1f}",
                    f"{np.mean(central):.1f} ± {np.std(central):.1f}",
                    f"{np.mean(fcm) - np.mean(central):+.1f} ({gaps})",
                    f"{alternation:.0f}",
                    "no such cell" if paper is None else f"{paper[0]} / {paper[1]}",
                )
            )
    return _markdown(header, rows)


def _family_cells(document: dict[str, Any]) -> list[tuple[str, dict[str, dict[str, Any]]]]:
    """The family and final metrics by run name of each experiment of a grid's or a single experiment's results."""
    if "points" in document:
        return [
            (point["values"][FAMILY_KEY], {run["name"]: run for run in point["runs"]}) for point in document["points"]
        ]
    family = document["config"]["runs"][0]["params"]["model"]["family"]
    return [(family, {run["name"]: run["final"] for run in document["runs"]})]


def _markdown(header: str, rows: list[tuple[str, ...]]) -> str:
    """A Markdown table: the header (its cells separated by `` | ``), its rule, one line per row."""
    rule = " | ".join("---" for _ in header.split(" | "))
    return "\n".join(f"| {line} |" for line in [header, rule, *(" | ".join(cells) for cells in rows)])


def main() -> None:
    """Print the three tables."""
    print(preset_table())
    print()
    print(swing_table())
    print()
    print(family_table())


if __name__ == "__main__":
    main()
