"""How one run of a grid compares with the best of the other runs, cell by cell.

A *cell* is a combination of the grid's axis values other than ``seed`` and
of a compared metric (``metric``); in each cell every run's final metric is
averaged over seeds. The compared run
is *best* in a cell when no other run's mean exceeds its own; its *margin* is
its mean minus the best other run's mean (in metric units; percentage points
for accuracy x 100).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fedmosaic.experiments.config import GridSection

SEED_AXIS = "seed"
METRIC_AXIS = "metric"


def compare_with_best_other(
    grid: GridSection, entries: list[dict[str, Any]], label: Callable[[Any], str] = str
) -> dict[str, Any] | None:
    """Cells where ``grid.compare`` is best, and its margin over the best other run.

    Parameters
    ----------
    grid : GridSection
        The grid (its ``compare`` run, ``metric`` and axes).
    entries : list of dict
        One entry per point: ``values`` (axis -> value) and ``runs`` (summary rows).
    label : callable, default str
        How an axis value is named in the cells.

    Returns
    -------
    dict or None
        ``None`` without ``grid.compare``, or when no cell holds another run to compare it
        with (a grid of one run); otherwise ``run``, ``metric`` (the grid's),
        ``cells`` (one row per cell), the overall ``count``, ``best`` and
        ``mean_margin``, and ``by_axis``: the same three per value of each axis.
    """
    if grid.compare is None:
        return None
    axes = [axis for axis in grid.axes if axis != SEED_AXIS]
    metrics = grid.compare_metrics or [grid.metric]
    if len(metrics) > 1:
        axes.append(METRIC_AXIS)
    finals: dict[tuple[str, ...], dict[str, list[float]]] = {}
    for entry in entries:
        values = [label(entry["values"][axis]) for axis in axes if axis != METRIC_AXIS]
        for metric in metrics:
            key = tuple([*values, metric] if len(metrics) > 1 else values)
            for run in entry["runs"]:
                if metric in run:
                    finals.setdefault(key, {}).setdefault(run["name"], []).append(float(run[metric]))
    cells: list[dict[str, Any]] = []
    for key, runs in finals.items():
        means = {name: float(np.mean(values)) for name, values in runs.items()}
        others = {name: value for name, value in means.items() if name != grid.compare}
        if grid.compare not in means or not others:
            continue
        rival = max(others, key=lambda name: others[name])
        margin = means[grid.compare] - others[rival]
        cells.append(
            {
                "cell": dict(zip(axes, key, strict=True)),
                "value": means[grid.compare],
                "best_other": rival,
                "best_other_value": others[rival],
                "margin": margin,
            }
        )
    if not cells:
        return None
    by_axis = {
        axis: {
            value: _tally([c for c in cells if c["cell"][axis] == value])
            for value in dict.fromkeys(c["cell"][axis] for c in cells)
        }
        for axis in axes
    }
    return {"run": grid.compare, "metric": grid.metric, "cells": cells, **_tally(cells), "by_axis": by_axis}


def _tally(cells: list[dict[str, Any]]) -> dict[str, Any]:
    margins = [c["margin"] for c in cells]
    return {
        "count": len(cells),
        "best": sum(m >= 0 for m in margins),
        "mean_margin": float(np.mean(margins)) if margins else None,
    }
