"""Specification of :func:`fedmosaic.report.grid_content.build_grid_document` and its figures."""

from typing import Any

import pytest

from fedmosaic.report import grid_plots
from fedmosaic.report.document import Heading, Table
from fedmosaic.report.grid_content import build_grid_document


def _point(train: str, seed: int, ours: float, other: float) -> dict[str, Any]:
    return {
        "values": {"vertical.train_missing": train, "seed": seed},
        "folder": f"points/{train}-{seed}",
        "runs": [
            {"name": "FALSE-VFL", "accuracy": ours, "accuracy_mcar0": ours, "accuracy_mcar5": ours - 0.1},
            {"name": "Local", "accuracy": other, "accuracy_mcar0": other, "accuracy_mcar5": other},
        ],
    }


def _cell(train: str, metric: str, margin: float) -> dict[str, Any]:
    return {
        "cell": {"vertical.train_missing": train, "metric": metric},
        "value": 0.8,
        "best_other": "Local",
        "best_other_value": 0.8 - margin,
        "margin": margin,
    }


@pytest.fixture(scope="module")
def grid_results() -> dict[str, Any]:
    """A vertical grid over two training missingness settings and two seeds, FALSE-VFL compared on two test settings."""
    counts = {"count": 2, "best": 1, "mean_margin": 0.05}
    return {
        "fedmosaic_version": "0.1.0",
        "experiment": "vfl-grid",
        "description": "FALSE-VFL vs Local",
        "config": {"runs": [{"name": "FALSE-VFL", "method": "false-vfl"}, {"name": "Local", "method": "vfl-local"}]},
        "grid": {
            "axes": {"vertical.train_missing": ["mcar:0.2", "mar:1"], "seed": [0, 1]},
            "rows": "vertical.train_missing",
            "columns": "seed",
            "metric": "accuracy",
            "secondary": "",
        },
        "table": {
            "header": ["vertical.train_missing", "run", "0", "1"],
            "rows": [["mcar:0.2", "FALSE-VFL", "80.0", "82.0"]],
            "metric": "accuracy",
        },
        "points": [_point(t, s, 0.8 + s / 50, 0.7) for t in ("mcar:0.2", "mar:1") for s in (0, 1)],
        "comparison": {
            "run": "FALSE-VFL",
            "metric": "accuracy",
            "count": 4,
            "best": 2,
            "mean_margin": 0.05,
            "by_axis": {
                "vertical.train_missing": {"mcar:0.2": counts, "mar:1": counts},
                "metric": {"accuracy_mcar0": counts, "accuracy_mcar5": counts},
            },
            "cells": [
                _cell(t, m, 0.1 if m.endswith("0") else -0.02)
                for t in ("mcar:0.2", "mar:1")
                for m in ("accuracy_mcar0", "accuracy_mcar5")
            ],
        },
    }


def test_the_grid_report_answers_first_with_its_table_and_a_figure(grid_results: dict[str, Any]) -> None:
    # Execute
    document = build_grid_document(grid_results)

    # Assert
    headings = [block.text for block in document.blocks if isinstance(block, Heading)]
    assert headings[0] == "Answer"
    assert isinstance(document.blocks[document.blocks.index(Heading("Answer")) + 2], Table)
    assert [image.path for image in document.images] == ["plots/grid.png", "plots/margins.png"]


def test_means_are_over_seeds_in_percent_by_row_column_and_run(grid_results: dict[str, Any]) -> None:
    # Execute
    means = grid_plots.grid_means(grid_results)

    # Assert: the columns axis is seed here, so each mean has one value
    assert means["mar:1"]["1"]["FALSE-VFL"] == pytest.approx((82.0, 0.0))
    assert set(means) == {"mcar:0.2", "mar:1"}


def test_margin_heatmap_puts_the_compared_metrics_in_columns(grid_results: dict[str, Any]) -> None:
    # Execute
    axes = grid_plots.margin_axes(grid_results["comparison"], "vertical.train_missing")

    # Assert
    assert axes == ("vertical.train_missing", "metric", [])
    assert grid_plots.margin_heatmap(grid_results["comparison"], "vertical.train_missing").startswith(b"\x89PNG")
