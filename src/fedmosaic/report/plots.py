"""Draw the report's figures as PNG bytes.

Figures are drawn with the Agg canvas, never on a screen, under matplotlib's
default style whatever the caller's ``rcParams``, at a fixed size and
resolution, and saved without metadata: the same results give the same bytes.
Each run keeps one colour across all figures.
"""

import io
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import matplotlib.style
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, MaxNLocator

from fedmosaic.errors import FedmosaicError
from fedmosaic.report.formatting import format_value
from fedmosaic.report.series import (
    Series,
    Traffic,
    final_by_run,
    metric_series_by_run,
    traffic_by_run,
)

FIGSIZE = (8.0, 4.5)
"""Figure width and height, in inches."""
DPI = 100
"""Pixels per inch."""
SMALL_COLUMNS = 3
"""Panels per row of :func:`small_multiples`."""

_STYLE = {
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def metric_curves(results: Mapping[str, Any], metric: str, references: Mapping[str, float] | None = None) -> bytes:
    """Plot ``metric`` over rounds, one line per run.

    A shaded band of ± one standard deviation is drawn where the rounds
    report ``<metric>_std``. Rounds without the metric are left out.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    metric : str
        Metric name, without the ``_std`` suffix.
    references : Mapping[str, float], optional
        Values drawn as labelled horizontal lines (e.g. the pre-trained start, centralized).

    Returns
    -------
    bytes
        The figure as PNG.

    Raises
    ------
    FedmosaicError
        If no round of any run reports ``metric``.
    """
    by_run = metric_series_by_run(results, metric)
    if not by_run:
        raise FedmosaicError(f"no round of any run reports metric {metric!r}")
    return render(
        partial(_draw_curves, by_run=by_run, colors=run_colors(results), metric=metric, references=references or {})
    )


def final_bars(results: Mapping[str, Any], metric: str, references: Mapping[str, float] | None = None) -> bytes:
    """Plot the final ``metric`` as one bar per run, with ± std error bars.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    metric : str
        Metric name, without the ``_std`` suffix.
    references : Mapping[str, float], optional
        Values drawn as labelled horizontal lines (e.g. the Bayes ceiling).

    Returns
    -------
    bytes
        The figure as PNG.

    Raises
    ------
    FedmosaicError
        If no run's final metrics hold ``metric``.
    """
    by_run = final_by_run(results, metric)
    if not by_run:
        raise FedmosaicError(f"no run has a final value of metric {metric!r}")
    labels = [f"{name}\n{format_value(value, std)}" for name, (value, std) in by_run.items()]
    return render(
        partial(
            _draw_bars,
            by_run=by_run,
            labels=labels,
            colors=run_colors(results),
            metric=metric,
            references=references or {},
        )
    )


def bytes_per_round(results: Mapping[str, Any]) -> bytes:
    """Plot the bytes sent up and down at each round, one line per run.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.

    Returns
    -------
    bytes
        The figure as PNG: uploads on the left, downloads on the right.

    Raises
    ------
    FedmosaicError
        If no run has any round.
    """
    by_run = traffic_by_run(results)
    if not by_run:
        raise FedmosaicError("no run has any round to plot")
    return render(partial(_draw_traffic, by_run=by_run, colors=run_colors(results)))


def intervention_curves(results: Mapping[str, Any]) -> bytes:
    """Plot task accuracy against the number of concepts intervened on, per run.

    Uses the runs' ``artifacts``: solid lines follow the topological order,
    dashed lines a random order; the left panel has noisy inputs
    (``topological``, ``random``), the right one clean inputs
    (``topological_clean``, ``random_clean``) when recorded. The Bayes
    ceiling (final ``bayes_optimal_accuracy``) is a black line when known.

    Raises
    ------
    FedmosaicError
        If no run has intervention curves.
    """
    curves = {
        run["name"]: run["artifacts"]
        for run in results["runs"]
        if isinstance(run.get("artifacts"), Mapping) and "topological" in run["artifacts"]
    }
    if not curves:
        raise FedmosaicError("no run has intervention curves")
    ceilings = [value for value, _ in final_by_run(results, "bayes_optimal_accuracy").values()]
    inputs = ["noisy"] + (["clean"] if any("topological_clean" in c for c in curves.values()) else [])
    return render(
        partial(
            _draw_interventions,
            curves=curves,
            colors=run_colors(results),
            inputs=inputs,
            ceiling=max(ceilings) if ceilings else None,
        )
    )


def _draw_interventions(
    figure: Figure,
    curves: dict[str, Mapping[str, Any]],
    colors: dict[str, str],
    inputs: list[str],
    ceiling: float | None,
) -> None:
    """Draw the topological (solid) and random (dashed) intervention curves of each run, one panel per input kind."""
    panels = np.atleast_1d(figure.subplots(1, len(inputs), sharey=True))
    for axes, kind in zip(panels, inputs, strict=True):
        suffix = "" if kind == "noisy" else "_clean"
        for name, artifacts in curves.items():
            for order, style in (("topological", "-"), ("random", "--")):
                values = artifacts.get(order + suffix, [])
                axes.plot(
                    range(len(values)),
                    values,
                    style,
                    marker="o",
                    markersize=3,
                    color=colors[name],
                    label=f"{name} ({order})",
                )
        if ceiling is not None:
            axes.axhline(ceiling, color="black", linewidth=1, label=f"Bayes ceiling {100 * ceiling:.1f}%")
        axes.set_title(f"{kind} inputs")
        axes.set_xlabel("concepts set to their true value")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    panels[0].set_ylabel("task accuracy")
    panels[0].legend(fontsize="small")
    figure.suptitle("task accuracy under test-time interventions (solid: topological order, dashed: random)")


def by_parties(results: Mapping[str, Any]) -> bytes:
    """Plot final accuracy against the number of parties present (``accuracy_keep<k>``), one line per run.

    Raises
    ------
    FedmosaicError
        If no run reports an ``accuracy_keep<k>`` metric.
    """
    by_run = parties_by_run(results)
    if not by_run:
        raise FedmosaicError("no run reports accuracy by the number of parties present (accuracy_keep<k>)")
    return render(partial(_draw_parties, by_run=by_run, colors=run_colors(results)))


def parties_by_run(results: Mapping[str, Any]) -> dict[str, dict[int, float]]:
    """Final accuracy per number of parties present, per run, from its ``accuracy_keep<k>`` metrics."""
    found: dict[str, dict[int, float]] = {}
    for run in results["runs"]:
        for key, value in run["final"].items():
            if (match := _KEEP.fullmatch(key)) is not None:
                found.setdefault(run["name"], {})[int(match.group(1))] = value
    return {name: dict(sorted(values.items())) for name, values in found.items()}


_KEEP = re.compile(r"accuracy_keep(\d+)")


def _draw_parties(figure: Figure, by_run: dict[str, dict[int, float]], colors: dict[str, str]) -> None:
    axes = figure.subplots()
    for name, values in by_run.items():
        axes.plot(list(values), [100 * v for v in values.values()], marker="o", color=colors[name], label=name)
    axes.set_xlabel("parties present at test time")
    axes.set_ylabel("accuracy (%)")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_title("accuracy by the number of parties present")
    axes.legend()


def small_multiples(
    results: Mapping[str, Any], metrics: list[str], titles: Mapping[str, str], percent: frozenset[str] = frozenset()
) -> bytes:
    """Plot each of ``metrics`` over rounds in its own small panel of one figure, one line per run.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    metrics : list[str]
        Metrics to plot, each reported by some run on some round.
    titles : Mapping[str, str]
        Panel title of each metric.
    percent : frozenset[str], optional
        Metrics that are fractions, drawn in percent.

    Returns
    -------
    bytes
        The figure as PNG: three panels a row, one legend for all.

    Raises
    ------
    FedmosaicError
        If ``metrics`` is empty or no round reports one of them.
    """
    by_metric = {
        metric: {name: _scaled(series, 100.0 if metric in percent else 1.0) for name, series in by_run.items()}
        for metric in metrics
        for by_run in [metric_series_by_run(results, metric)]
    }
    if not metrics or not all(by_metric.values()):
        raise FedmosaicError(f"no round reports one of the metrics {metrics}")
    rows = -(-len(metrics) // SMALL_COLUMNS)
    size = (FIGSIZE[0], 2.2 * rows + 0.6)
    return render(partial(_draw_small_multiples, by_metric=by_metric, colors=run_colors(results), titles=titles), size)


def _scaled(series: Series, factor: float) -> Series:
    return Series(series.rounds, factor * series.values, factor * series.stds)


def _draw_small_multiples(
    figure: Figure, by_metric: dict[str, dict[str, Series]], colors: dict[str, str], titles: Mapping[str, str]
) -> None:
    rows = -(-len(by_metric) // SMALL_COLUMNS)
    panels = np.atleast_1d(figure.subplots(rows, SMALL_COLUMNS, squeeze=False)).ravel()
    for axes, (metric, by_run) in zip(panels, by_metric.items(), strict=False):
        for name, series in by_run.items():
            axes.plot(series.rounds, series.values, color=colors[name], linewidth=1.2, label=name)
            axes.fill_between(
                series.rounds,
                series.values - series.stds,
                series.values + series.stds,
                color=colors[name],
                alpha=0.2,
                linewidth=0,
            )
        axes.set_title(titles.get(metric, metric), fontsize="medium")
        axes.tick_params(labelsize="small")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    for axes in panels[len(by_metric) :]:
        axes.set_visible(False)
    handles, names = panels[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", ncols=min(len(names), 6), fontsize="small")


def run_colors(results: Mapping[str, Any]) -> dict[str, str]:
    """Give each run the colour of its position in the configured runs (``results["config"]["runs"]``)."""
    return {run["name"]: f"C{index % 10}" for index, run in enumerate(results["config"].get("runs") or results["runs"])}


def render(draw: Callable[[Figure], None], size: tuple[float, float] = FIGSIZE) -> bytes:
    """Create a figure of ``size`` inches, let ``draw`` fill it and return it as PNG bytes."""
    with matplotlib.style.context(["default", _STYLE]):
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _round_axis(axes: Axes) -> None:
    """Label the x axis as integer round numbers."""
    axes.set_xlabel("round")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


def _draw_curves(
    figure: Figure, by_run: dict[str, Series], colors: dict[str, str], metric: str, references: Mapping[str, float]
) -> None:
    """Draw one line per run, with a ± std band where stds are reported, and the reference lines."""
    axes = figure.subplots()
    _draw_references(axes, references)
    for name, series in by_run.items():
        axes.plot(series.rounds, series.values, marker="o", markersize=3, color=colors[name], label=name)
        axes.fill_between(
            series.rounds,
            series.values - series.stds,
            series.values + series.stds,
            color=colors[name],
            alpha=0.2,
            linewidth=0,
        )
    axes.set_title(f"{metric} per round")
    axes.set_ylabel(metric)
    _round_axis(axes)
    axes.legend()


def _draw_bars(
    figure: Figure,
    by_run: dict[str, tuple[float, float | None]],
    labels: list[str],
    colors: dict[str, str],
    metric: str,
    references: Mapping[str, float],
) -> None:
    """Draw one bar per run, labelled with its value, with error bars where stds exist, and the reference lines."""
    axes = figure.subplots()
    _draw_references(axes, references)
    positions = np.arange(len(by_run))
    values = np.array([value for value, _ in by_run.values()])
    stds = np.array([np.nan if std is None else std for _, std in by_run.values()])
    axes.bar(positions, values, color=[colors[name] for name in by_run], width=0.6)
    has_std = ~np.isnan(stds)
    axes.errorbar(positions[has_std], values[has_std], yerr=stds[has_std], fmt="none", ecolor="black", capsize=6)
    axes.set_xticks(positions, labels)
    axes.grid(axis="x", visible=False)
    axes.set_title(f"final {metric}")
    axes.set_ylabel(metric)
    if references:
        figure.legend(loc="outside lower center", ncols=len(references))


def _draw_references(axes: Axes, references: Mapping[str, float]) -> None:
    """Draw each reference value as a labelled black horizontal line, each in its own style."""
    for (name, value), style in zip(references.items(), ("-", "--", ":", "-."), strict=False):
        axes.axhline(value, color="black", linestyle=style, linewidth=1, label=f"{name} ({value:.3f})")


def _draw_traffic(figure: Figure, by_run: dict[str, Traffic], colors: dict[str, str]) -> None:
    """Draw bytes per round, uploads and downloads side by side, one line per run."""
    upload, download = figure.subplots(1, 2, sharey=True)
    for name, traffic in by_run.items():
        style = {"marker": "o", "markersize": 3, "color": colors[name], "label": name}
        upload.plot(traffic.rounds, traffic.up, **style)
        download.plot(traffic.rounds, traffic.down, **style)
    for axes, direction in ((upload, "up (clients → server)"), (download, "down (server → clients)")):
        axes.set_title(direction)
        axes.yaxis.set_major_formatter(EngFormatter(unit="B"))
        _round_axis(axes)
    upload.set_ylabel("bytes per round")
    upload.legend()
    figure.suptitle("communication per round")
