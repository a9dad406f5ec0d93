"""Decide what a report says: build its :class:`~fedmosaic.report.document.Document`.

A report answers first: one table of the headline metrics of its kind of
task and one figure, then the figures of that kind of task (the fused
graph, who labels what and the intervention curves for F-CMs; accuracy
against the pre-trained start and centralized training for horizontal
methods; accuracy by the number of parties present for vertical ones),
then every other per-round metric in one figure of small multiples, and
the details (all final metrics, communication, last rounds, configuration).
"""

import base64
import json
from collections.abc import Mapping
from typing import Any

from fedmosaic.report import plots
from fedmosaic.report.concept_figures import concept_sections
from fedmosaic.report.document import Block, Code, Document, Heading, Image, Paragraph, Table, plot_image
from fedmosaic.report.formatting import MISSING, format_bytes, format_seconds
from fedmosaic.report.headline import format_headline, headline_metrics, is_percent, label, name_of, task_kind
from fedmosaic.report.oscillation_note import oscillation_notes
from fedmosaic.report.privacy_note import privacy_notes
from fedmosaic.report.series import final_by_run, final_metric_names, metric_series_by_run, traffic_by_run

LAST_ROUNDS = 3
"""How many of each run's last rounds the round table shows."""

ROUND_CURVES = {"classification": ("accuracy", "colour_reliance"), "concepts": ("accuracy",), "vertical": ("accuracy",)}
"""Metrics drawn over rounds in a figure of their own (with reference lines), per kind of task."""


def build_document(results: Mapping[str, Any]) -> Document:
    """Build the report of one experiment.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.

    Returns
    -------
    Document
        The report, its figures included.
    """
    kind = task_kind(results)
    runs = results["runs"]
    headline = headline_metrics(results, kind)
    curves = [m for m in ROUND_CURVES[kind] if _has_curve(results, m)]
    blocks: list[Block] = [
        Paragraph(results["description"]),
        Paragraph(
            f"Experiment {results['experiment']} · seed {results['seed']} · "
            f"{len(runs)} runs · fedmosaic {results['fedmosaic_version']}"
        ),
        Heading("Answer"),
        headline_table(runs, headline),
        Paragraph(
            "Final metrics on the test set, in percent where marked (%); ± is one standard deviation "
            "over the run's clients where it trains them separately. Sent: megabytes up and down."
        ),
        *(Paragraph(f"Privacy. {note}") for note in privacy_notes(results)),
        *(Paragraph(f"Oscillation. {note}") for note in oscillation_notes(results)),
        *_headline_images(results, headline),
        *(concept_sections(results) if kind == "concepts" else ()),
        *_section("Per round", [_curve_image(results, metric) for metric in curves]),
        *_section("Accuracy by parties present", _parties_images(results)),
        *_section("Other metrics per round", _small_multiples(results, exclude=set(curves))),
        *_section("Communication per round", _traffic_images(results)),
        *_section("Data", _data_images(results)),
        Heading("All final metrics"),
        _all_final_table(results),
        Heading("Communication and time"),
        _totals_table(runs, results["config"].get("federation", {}).get("target_accuracy")),
        Heading(f"Last {LAST_ROUNDS} rounds of each run"),
        _last_rounds_table(runs),
        Heading("Configuration"),
        Code(json.dumps(results["config"], indent=2, ensure_ascii=False), "json"),
    ]
    return Document(title=results["experiment"], blocks=tuple(blocks))


def headline_table(runs: list[dict[str, Any]], metrics: list[str]) -> Table:
    """One row per run: its headline metrics in their units, the megabytes it sent and its wall time."""
    return Table(
        header=("Run", *(label(m) for m in metrics), "Sent (MB)", "Time (s)"),
        rows=tuple(
            (
                run["name"],
                *(format_headline(run["final"], m) for m in metrics),
                f"{(run['bytes_up_total'] + run['bytes_down_total']) / 1e6:.2f}",
                f"{run['wall_time_s']:.1f}",
            )
            for run in runs
        ),
    )


PRETRAINED = "pretrained_"
"""Prefix of the metrics of the pre-trained model a federation starts from (reference lines, not curves)."""


def references(results: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Reference values of ``metric``: the Bayes ceiling, the pre-trained start and centralized training, when known.

    The Bayes ceiling (``bayes_optimal_accuracy``, for ``accuracy`` only) and
    the pre-trained start (``pretrained_<metric>``) are final metrics of some
    run; centralized is the final ``metric`` of the run whose setting is
    ``centralized``.
    """
    keys = {PRETRAINED + metric: "pre-trained start"}
    if metric == "accuracy":
        keys = {"bayes_optimal_accuracy": "Bayes ceiling", **keys}
    found: dict[str, float] = {}
    for key, name in keys.items():
        values = [value for value, _ in final_by_run(results, key).values()]
        if values:
            found[name] = max(values)
    for run in results["runs"]:
        if run["setting"] == "centralized" and metric in run["final"]:
            found[f"{run['name']} (final)"] = run["final"][metric]
    return found


def _headline_images(results: Mapping[str, Any], headline: list[str]) -> list[Image]:
    """The final value of the first headline metric, one bar per run, with its reference lines."""
    if not headline:
        return []
    metric = headline[0]
    return [
        plot_image(
            f"final_{metric}",
            f"final {label(metric).lower()} of each run (bars, ± std), with reference lines",
            plots.final_bars(results, metric, references(results, metric)),
        )
    ]


def _has_curve(results: Mapping[str, Any], metric: str) -> bool:
    return any(len(series.rounds) >= 2 for series in metric_series_by_run(results, metric).values())


def _curve_image(results: Mapping[str, Any], metric: str) -> Image:
    refs = references(results, metric)
    lines = f", with {', '.join(refs)} as reference lines" if refs else ""
    return plot_image(
        f"curve_{metric}",
        f"{name_of(metric).lower()} per round, one line per run{lines}",
        plots.metric_curves(results, metric, refs),
    )


def _parties_images(results: Mapping[str, Any]) -> list[Image]:
    if not plots.parties_by_run(results):
        return []
    return [
        plot_image(
            "by_parties", "final accuracy by the number of parties present at test time", plots.by_parties(results)
        )
    ]


def _small_multiples(results: Mapping[str, Any], exclude: set[str]) -> list[Image]:
    """One figure with a small panel per other metric reported on two rounds or more."""
    metrics = [
        m
        for m in final_metric_names(results)
        if m not in exclude and not m.startswith(PRETRAINED) and _has_curve(results, m)
    ]
    if not metrics:
        return []
    titles = {m: label(m) for m in metrics}
    return [
        plot_image(
            "other_metrics",
            f"per round: {', '.join(titles.values())}; one line per run",
            plots.small_multiples(results, metrics, titles, frozenset(filter(is_percent, metrics))),
        )
    ]


def _data_images(results: Mapping[str, Any]) -> list[Image]:
    """Pictures of the data that the run recorded (e.g. Simpson-MNIST samples per client)."""
    return [
        plot_image(figure["name"], figure["caption"], base64.b64decode(figure["png_base64"]))
        for figure in results.get("figures", [])
    ]


def _section(heading: str, images: list[Image]) -> list[Block]:
    """Return a heading followed by ``images``, or nothing when there are none."""
    return [Heading(heading), *images] if images else []


def _all_final_table(results: Mapping[str, Any]) -> Table:
    """Every final metric, one row per metric and one column per run, so that it fits the page."""
    runs = results["runs"]
    return Table(
        header=("Metric", *(run["name"] for run in runs)),
        rows=tuple(
            (label(metric), *(format_headline(run["final"], metric) for run in runs))
            for metric in final_metric_names(results)
        ),
    )


def _totals_table(runs: list[dict[str, Any]], target: float | None = None) -> Table:
    """One row per run: rounds, trained and skipped rounds, total bytes, wall time, and rounds to the target accuracy if set."""
    extra = (f"Rounds to {target:g}",) if target is not None else ()
    return Table(
        header=("Run", "Rounds", "Trained", "Skipped", "Bytes up", "Bytes down", "Wall time", *extra),
        rows=tuple(
            (
                run["name"],
                str(len(run["history"])),
                str(sum(entry["status"] == "ok" for entry in run["history"])),
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


def _last_rounds_table(runs: list[dict[str, Any]]) -> Table:
    """The last :data:`LAST_ROUNDS` rounds of every run, one row per round (the metrics are in the figures)."""
    return Table(
        header=("Run", "Round", "Status", "Replies", "Dropped", "Up", "Down", "Time"),
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
            )
            for run in runs
            for entry in run["history"][-LAST_ROUNDS:]
        ),
    )


def _traffic_images(results: Mapping[str, Any]) -> list[Image]:
    """The bytes-per-round figure, when some run has rounds."""
    if not traffic_by_run(results):
        return []
    return [plot_image("bytes_per_round", "bytes sent per round", plots.bytes_per_round(results))]
