"""The report of a grid of experiments: its table and the points behind it."""

import json
from collections.abc import Mapping
from typing import Any

from fedmosaic.report.document import Code, Document, Heading, Paragraph, Table


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
            Paragraph(f"Grid over {axes}; {len(results['points'])} experiments · fedmosaic {results['fedmosaic_version']}"),
            Heading("Table"),
            Paragraph(f"{grid['metric']} in percent, mean ± std over the other axes{secondary}."),
            Table(header=tuple(table["header"]), rows=tuple(tuple(row) for row in table["rows"])),
            Heading("Points"),
            points,
            Heading("Configuration"),
            Code(json.dumps(results["config"], indent=2, ensure_ascii=False), "json"),
        ),
    )
