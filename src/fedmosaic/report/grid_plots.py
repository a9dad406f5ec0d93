"""Figures of a grid's summary: the compared run's margin over the best other run, cell by cell."""

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fedmosaic.errors import FedmosaicError
from fedmosaic.report.headline import is_percent, label
from fedmosaic.report.plots import FIGSIZE, render

METRIC_AXIS = "metric"


def grid_means(results: Mapping[str, Any]) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    """Mean and std over the other axes (seeds) of the grid's metric: by row value, column value, then run.

    Values are in percent when the metric is an accuracy, as in the grid's table.
    """
    grid = results["grid"]
    scale = 100.0 if is_percent(grid["metric"]) else 1.0
    found: dict[str, dict[str, dict[str, list[float]]]] = {}
    for entry in results["points"]:
        row = str(entry["values"].get(grid["rows"], "")) if grid.get("rows") else ""
        column = str(entry["values"].get(grid["columns"], "")) if grid.get("columns") else ""
        for run in entry["runs"]:
            if grid["metric"] in run:
                found.setdefault(row, {}).setdefault(column, {}).setdefault(run["name"], []).append(
                    scale * float(run[grid["metric"]])
                )
    return {
        row: {c: {n: (float(np.mean(v)), float(np.std(v))) for n, v in runs.items()} for c, runs in columns.items()}
        for row, columns in found.items()
    }


def grid_bars(results: Mapping[str, Any]) -> bytes:
    """Draw the grid's metric as grouped bars: a panel per row value, a group per column value, a bar per run.

    Raises
    ------
    FedmosaicError
        If no point reports the grid's metric.
    """
    means = grid_means(results)
    if not means:
        raise FedmosaicError(f"no point of the grid reports {results['grid']['metric']!r}")
    runs = list(dict.fromkeys(n for columns in means.values() for c in columns.values() for n in c))
    size = (FIGSIZE[0], min(9.0, 2.3 * len(means) + 0.8))
    return render(partial(_draw_bars, means=means, runs=runs, metric=label(results["grid"]["metric"])), size)


def _draw_bars(
    figure: Figure, means: dict[str, dict[str, dict[str, tuple[float, float]]]], runs: list[str], metric: str
) -> None:
    panels = np.atleast_1d(figure.subplots(len(means), 1, squeeze=False, sharey=True)).ravel()
    width = 0.8 / len(runs)
    for axes, (row, columns) in zip(panels, means.items(), strict=True):
        for index, run in enumerate(runs):
            found = [columns[c].get(run, (np.nan, np.nan)) for c in columns]
            axes.bar(
                np.arange(len(columns)) + (index - (len(runs) - 1) / 2) * width,
                [m for m, _ in found],
                width,
                yerr=[s for _, s in found],
                color=f"C{index % 10}",
                label=run,
                capsize=2,
            )
        axes.set_xticks(range(len(columns)), list(columns))
        axes.set_title(row, fontsize="medium")
        axes.set_ylabel(metric, fontsize="small")
        axes.grid(axis="x", visible=False)
    figure.legend(*panels[0].get_legend_handles_labels(), loc="outside lower center", ncols=min(len(runs), 6))


def margin_axes(comparison: Mapping[str, Any], rows: str) -> tuple[str, str, list[str]]:
    """Choose the heatmap's row axis, column axis and panel axes among the comparison's axes.

    The columns are the compared metrics when there are several (e.g. the test
    missingness of ``vfl-grid``), otherwise the last axis that is not ``rows``;
    each combination of the remaining axes is a panel.

    Raises
    ------
    FedmosaicError
        If the comparison has fewer than two axes.
    """
    axes = list(comparison["by_axis"])
    if len(axes) < 2:
        raise FedmosaicError(f"a margin heatmap needs two axes besides seed, got {axes}")
    row = rows if rows in axes else axes[0]
    column = METRIC_AXIS if METRIC_AXIS in axes and row != METRIC_AXIS else [a for a in axes if a != row][-1]
    return row, column, [a for a in axes if a not in (row, column)]


def margin_heatmap(comparison: Mapping[str, Any], rows: str) -> bytes:
    """Draw the compared run's margin over the best other run (percentage points) as heatmaps.

    Parameters
    ----------
    comparison : Mapping[str, Any]
        A grid's ``comparison`` entry (see :mod:`fedmosaic.experiments.comparison`).
    rows : str
        The grid's row axis (e.g. the training missingness).

    Returns
    -------
    bytes
        The figure as PNG: one panel per value of the other axes, green where
        the compared run leads, red where it trails, each cell labelled.
    """
    row, column, others = margin_axes(comparison, rows)
    panels: dict[str, dict[tuple[str, str], float]] = {}
    for cell in comparison["cells"]:
        values = cell["cell"]
        title = ", ".join(str(values[a]) for a in others) or comparison["run"]
        panels.setdefault(title, {})[(str(values[row]), str(values[column]))] = 100 * cell["margin"]
    row_values = [str(v) for v in comparison["by_axis"][row]]
    column_values = [str(v) for v in comparison["by_axis"][column]]
    height = min(9.0, 0.45 * len(row_values) * len(panels) + 1.5 * len(panels))
    return render(
        partial(
            _draw,
            panels=panels,
            row_values=row_values,
            column_values=column_values,
            labels=(row, column),
            run=str(comparison["run"]),
        ),
        (FIGSIZE[0], max(height, 3.0)),
    )


def _draw(
    figure: Figure,
    panels: dict[str, dict[tuple[str, str], float]],
    row_values: list[str],
    column_values: list[str],
    labels: tuple[str, str],
    run: str,
) -> None:
    grids = np.atleast_1d(figure.subplots(len(panels), 1, squeeze=False)).ravel()
    limit = max((abs(v) for cells in panels.values() for v in cells.values()), default=1.0) or 1.0
    image = None
    for axes, (title, cells) in zip(grids, panels.items(), strict=True):
        matrix = np.array([[cells.get((r, c), np.nan) for c in column_values] for r in row_values])
        image = axes.imshow(matrix, cmap="RdYlGn", vmin=-limit, vmax=limit, aspect="auto")
        for (i, j), value in np.ndenumerate(matrix):
            if not np.isnan(value):
                axes.text(j, i, f"{value:+.1f}", ha="center", va="center", fontsize="small")
        axes.set_xticks(range(len(column_values)), column_values, rotation=20, ha="right", fontsize="small")
        axes.set_yticks(range(len(row_values)), row_values, fontsize="small")
        axes.set_ylabel(labels[0], fontsize="small")
        axes.set_title(title, fontsize="medium")
        axes.grid(False)
    grids[-1].set_xlabel(labels[1])
    if image is not None:
        figure.colorbar(image, ax=list(grids), label=f"{run} − best other (points)", shrink=0.8)
