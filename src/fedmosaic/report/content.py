"""Decide what a report says: build its :class:`~fedmosaic.report.document.Document`."""

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from fedmosaic.report import plots
from fedmosaic.report.document import Block, Code, Document, Heading, Image, Paragraph, Table
from fedmosaic.report.formatting import MISSING, format_bytes, format_metric, format_seconds
from fedmosaic.report.series import (
    final_by_run,
    final_metric_names,
    metric_series_by_run,
    traffic_by_run,
)

LAST_ROUNDS = 3
"""How many of each run's last rounds the round table shows."""

PLOTS_DIR = "plots"
"""Folder, relative to the report, that holds its images."""


def build_document(results: Mapping[str, Any]) -> Document:
    """Build the report of one experiment.

    The report holds the description, a table of final metrics, a table of
    communication and time, figures (each final metric over rounds, the
    final comparison when several runs report a metric, bytes per round),
    each run's last rounds and the full configuration.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.

    Returns
    -------
    Document
        The report, its figures included.
    """
    metrics = final_metric_names(results)
    runs = results["runs"]
    blocks: list[Block] = [
        Paragraph(results["description"]),
        Paragraph(
            f"Experiment {results['experiment']} · seed {results['seed']} · "
            f"{len(runs)} runs · fedmosaic {results['fedmosaic_version']}"
        ),
        *_section("Data", _data_images(results)),
        Heading("Final metrics"),
        _final_table(runs, metrics),
        Heading("Communication and time"),
        _totals_table(runs, results["config"].get("federation", {}).get("target_accuracy")),
        *_section("Metrics per round", _curve_images(results, metrics)),
        *_section("Final comparison", _bar_images(results, metrics)),
        *_section("Communication per round", _traffic_images(results)),
        *_section("Interventions", _intervention_images(results)),
        Heading(f"Last {LAST_ROUNDS} rounds of each run"),
        _last_rounds_table(runs, metrics),
        Heading("Configuration"),
        Code(json.dumps(results["config"], indent=2, ensure_ascii=False), "json"),
    ]
    return Document(title=results["experiment"], blocks=tuple(blocks))


def _data_images(results: Mapping[str, Any]) -> list[Image]:
    """Pictures of the data that the run recorded (e.g. Simpson-MNIST samples per client)."""
    return [
        _image(figure["name"], figure["caption"], base64.b64decode(figure["png_base64"]))
        for figure in results.get("figures", [])
    ]


def _intervention_images(results: Mapping[str, Any]) -> list[Image]:
    """The intervention curves, when some run recorded them."""
    if not any("topological" in (run.get("artifacts") or {}) for run in results["runs"]):
        return []
    return [_image("interventions", "task accuracy under test-time interventions", plots.intervention_curves(results))]


def _section(heading: str, images: list[Image]) -> list[Block]:
    """Return a heading followed by ``images``, or nothing when there are none."""
    return [Heading(heading), *images] if images else []


def _image(name: str, caption: str, png: bytes) -> Image:
    """Return an image stored under :data:`PLOTS_DIR`, its file name made safe."""
    return Image(f"{PLOTS_DIR}/{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png", caption, png)


def _final_table(runs: list[dict[str, Any]], metrics: list[str]) -> Table:
    """One row per run: its setting, method and final metrics."""
    return Table(
        header=("Run", "Setting", "Method", *metrics),
        rows=tuple(
            (run["name"], run["setting"], run["method"], *(format_metric(run["final"], m) for m in metrics))
            for run in runs
        ),
    )


def _totals_table(runs: list[dict[str, Any]], target: float | None = None) -> Table:
    """One row per run: rounds, skipped rounds, total bytes, wall time, and rounds to the target accuracy if set."""
    extra = (f"Rounds to {target:g}",) if target is not None else ()
    return Table(
        header=("Run", "Rounds", "Skipped", "Bytes up", "Bytes down", "Wall time", *extra),
        rows=tuple(
            (
                run["name"],
                str(len(run["history"])),
                str(sum(entry["status"] == "skipped" for entry in run["history"])),
                format_bytes(run["bytes_up_total"]),
                format_bytes(run["bytes_down_total"]),
                format_seconds(run["wall_time_s"]),
                *((_rounds(run.get("rounds_to_target")),) if target is not None else ()),
            )
            for run in runs
        ),
    )


def _rounds(value: int | None) -> str:
    return "not reached" if value is None else str(value)


def _last_rounds_table(runs: list[dict[str, Any]], metrics: list[str]) -> Table:
    """The last :data:`LAST_ROUNDS` rounds of every run, one row per round."""
    return Table(
        header=("Run", "Round", "Status", "Replies", "Dropped", "Up", "Down", "Time", *metrics),
        rows=tuple(
            (
                run["name"],
                str(entry["round"]),
                f"{entry['status']}: {entry['reason']}" if entry.get("reason") else entry["status"],
                f"{entry['replies']}/{entry['clients_sampled']}",
                ", ".join(str(client) for client in entry["dropped"]) or MISSING,
                format_bytes(entry["bytes_up"]),
                format_bytes(entry["bytes_down"]),
                format_seconds(entry["wall_time_s"]),
                *(format_metric(entry["metrics"], m) for m in metrics),
            )
            for run in runs
            for entry in run["history"][-LAST_ROUNDS:]
        ),
    )


def _curve_images(results: Mapping[str, Any], metrics: list[str]) -> list[Image]:
    """A curve per metric that some run reports on two rounds or more (not final-only metrics)."""
    return [
        _image(f"curve_{metric}", f"{metric} per round", plots.metric_curves(results, metric))
        for metric in metrics
        if any(len(series.rounds) >= 2 for series in metric_series_by_run(results, metric).values())
    ]


def _bar_images(results: Mapping[str, Any], metrics: list[str]) -> list[Image]:
    """A bar chart per metric whose final value more than one run reports."""
    return [
        _image(f"final_{metric}", f"final {metric} per run", plots.final_bars(results, metric))
        for metric in metrics
        if len(final_by_run(results, metric)) > 1
    ]


def _traffic_images(results: Mapping[str, Any]) -> list[Image]:
    """The bytes-per-round figure, when some run has rounds."""
    if not traffic_by_run(results):
        return []
    return [_image("bytes_per_round", "bytes sent per round", plots.bytes_per_round(results))]
