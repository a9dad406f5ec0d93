"""The report of a grid of experiments: its table and the points behind it."""

import json
from collections.abc import Mapping
from typing import Any

from fedmosaic.report.document import Block, Code, Document, Heading, Image, Paragraph, Table, plot_image
from fedmosaic.report.grid_plots import grid_bars, grid_means, margin_heatmap
from fedmosaic.report.headline import label


def build_grid_document(results: Mapping[str, Any]) -> Document:
    """Build the report of a grid: the table, then one line per point.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of a grid's ``results.json`` (it has a ``"grid"`` entry).

    Returns
    -------
    Document
    """
    grid, table = results["grid"], results["table"]
    secondary = f" ({grid['secondary']} in parentheses)" if grid.get("secondary") else ""
    axes = ", ".join(f"{key} in {values}" for key, values in grid["axes"].items())
    points = Table(
        header=("point", *grid["axes"], "runs", "report"),
        rows=tuple(
            (
                str(index),
                *(str(entry["values"][key]) for key in grid["axes"]),
                ", ".join(run["name"] for run in entry["runs"]),
                f"{entry['folder']}/report.html",
            )
            for index, entry in enumerate(results["points"])
        ),
    )
    return Document(
        title=results["experiment"],
        blocks=(
            Paragraph(results.get("description", "")),
            Paragraph(
                f"Grid over {axes}; {len(results['points'])} experiments · fedmosaic {results['fedmosaic_version']}"
            ),
            Heading("Answer"),
            Paragraph(f"{grid['metric']} in percent, mean ± std over the other axes{secondary}."),
            Table(header=tuple(table["header"]), rows=tuple(tuple(row) for row in table["rows"])),
            *_headline_images(results),
            *comparison_blocks(results.get("comparison"), grid.get("rows", "")),
            Heading("Points"),
            points,
            Heading("Configuration"),
            Code(json.dumps(results["config"], indent=2, ensure_ascii=False), "json"),
        ),
    )


def _headline_images(results: Mapping[str, Any]) -> tuple[Image, ...]:
    """The grid's metric as grouped bars (one panel per row value), when some point reports it."""
    if not grid_means(results):
        return ()
    grid = results["grid"]
    return (
        plot_image(
            "grid",
            f"{label(grid['metric']).lower()} by {grid.get('rows')} and {grid.get('columns')}, "
            "one bar per run, mean ± std over the other axes",
            grid_bars(results),
        ),
    )


def comparison_blocks(comparison: Mapping[str, Any] | None, rows: str = "") -> tuple[Block, ...]:
    """The section comparing one run with the best other run in every cell (none without a comparison).

    With two axes or more besides seed, the margins are also drawn as a heatmap (``rows`` down the side).
    """
    if comparison is None:
        return ()
    run, metric = comparison["run"], comparison["metric"]
    tally = Table(
        header=("axis", "value", "cells", f"{run} best", "mean margin (points)"),
        rows=(
            ("all", "", *_tally_cells(comparison)),
            *(
                (axis, value, *_tally_cells(counts))
                for axis, values in comparison["by_axis"].items()
                for value, counts in values.items()
            ),
        ),
    )
    cells = Table(
        header=(*comparison["by_axis"], run, "best other", "margin (points)"),
        rows=tuple(
            (
                *cell["cell"].values(),
                f"{100 * cell['value']:.1f}",
                f"{cell['best_other']} {100 * cell['best_other_value']:.1f}",
                f"{100 * cell['margin']:+.1f}",
            )
            for cell in comparison["cells"]
        ),
    )
    return (
        Heading(f"{run} against the best other run"),
        Paragraph(
            f"A cell is a combination of the axes other than seed ({metric} averaged over seeds); "
            f"{run} is best when no other run's mean is higher; the margin is {run}'s mean minus the best other run's, "
            "in percentage points."
        ),
        tally,
        *_margin_images(comparison, rows),
        cells,
    )


def _margin_images(comparison: Mapping[str, Any], rows: str) -> tuple[Image, ...]:
    if len(comparison["by_axis"]) < 2:
        return ()
    run = comparison["run"]
    return (
        plot_image(
            "margins",
            f"margin of {run} over the best other run, in points, per cell (green: {run} leads)",
            margin_heatmap(comparison, rows),
        ),
    )


def _tally_cells(counts: Mapping[str, Any]) -> tuple[str, str, str]:
    margin = counts["mean_margin"]
    return str(counts["count"]), str(counts["best"]), "—" if margin is None else f"{100 * margin:+.1f}"
