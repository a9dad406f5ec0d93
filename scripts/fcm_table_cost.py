"""Print what reproducing the F-CMs main table costs, from the runs' own wall times in its committed results.

Reads ``docs/results/fcm-kept-table-*.json`` (the main table, run as the
``fcm-table`` preset runs it, with ``--jobs 2``) and prints, per network and
in all, the grid points, the runs and the sum of the runs' wall times. The
runs ran two at a time on two cores, so half that sum is the table's
training wall time; each point's own costs (sampling its splits, its report)
are not in it.

Usage::

    python scripts/fcm_table_cost.py
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
FILES = "fcm-kept-table-*.json"
JOBS = 2
"""Runs side by side when the committed table was run (``--jobs 2``)."""


def costs(folder: Path) -> tuple[Counter[str], Counter[str], dict[str, float]]:
    """Points, runs and summed run wall seconds by network, over the committed main table's files."""
    points: Counter[str] = Counter()
    runs: Counter[str] = Counter()
    seconds: dict[str, float] = {}
    for path in sorted(folder.glob(FILES)):
        for point in json.loads(path.read_text())["points"]:
            network = str(point["values"]["data.network"])
            points[network] += 1
            runs[network] += len(point["runs"])
            seconds[network] = seconds.get(network, 0.0) + sum(run["wall_time_s"] for run in point["runs"])
    return points, runs, seconds


def table(folder: Path) -> str:
    """The cost by network and in all, as a Markdown table."""
    points, runs, seconds = costs(folder)
    lines = ["| network | points | runs | runs' wall time, summed | at 2 jobs |", "|---|---:|---:|---:|---:|"]
    for network, total in seconds.items():
        lines.append(
            f"| {network} | {points[network]} | {runs[network]} | {total / 3600:.2f} h | {total / JOBS / 3600:.2f} h |"
        )
    whole = sum(seconds.values())
    lines.append(
        f"| all | {sum(points.values())} | {sum(runs.values())} | {whole / 3600:.2f} h | {whole / JOBS / 3600:.2f} h |"
    )
    return "\n".join(lines)


def main() -> None:
    print(table(RESULTS))


if __name__ == "__main__":
    main()
