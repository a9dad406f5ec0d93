"""Draw the report's figures as PNG bytes.

Figures are drawn with the Agg canvas, never on a screen, under matplotlib's
default style whatever the caller's ``rcParams``, at a fixed size and
resolution, and saved without metadata: the same results give the same bytes.
Each run keeps one colour across all figures.
"""

import io
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

_STYLE = {
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}


def metric_curves(results: Mapping[str, Any], metric: str) -> bytes:
    """Plot ``metric`` over rounds, one line per run.

    A shaded band of ± one standard deviation is drawn where the rounds
    report ``<metric>_std``. Rounds without the metric are left out.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    metric : str
        Metric name, without the ``_std`` suffix.

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
    return _render(partial(_draw_curves, by_run=by_run, colors=_run_colors(results), metric=metric))


def final_bars(results: Mapping[str, Any], metric: str) -> bytes:
    """Plot the final ``metric`` as one bar per run, with ± std error bars.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    metric : str
        Metric name, without the ``_std`` suffix.

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
    return _render(
        partial(_draw_bars, by_run=by_run, labels=labels, colors=_run_colors(results), metric=metric)
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
    return _render(partial(_draw_traffic, by_run=by_run, colors=_run_colors(results)))


def intervention_curves(results: Mapping[str, Any]) -> bytes:
    """Plot task accuracy against the number of concepts intervened on, per run.

    Uses the runs' ``artifacts``: solid lines follow the topological order,
    dashed lines a random order.

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
    return _render(partial(_draw_interventions, curves=curves, colors=_run_colors(results)))


def _draw_interventions(figure: Figure, curves: dict[str, Mapping[str, Any]], colors: dict[str, str]) -> None:
    """Draw the topological (solid) and random (dashed) intervention curves of each run."""
    axes = figure.subplots()
    for name, artifacts in curves.items():
        for order, style in (("topological", "-"), ("random", "--")):
            values = artifacts.get(order, [])
            axes.plot(range(len(values)), values, style, marker="o", markersize=3, color=colors[name],
                      label=f"{name} ({order})")
    axes.set_title("task accuracy under test-time interventions")
    axes.set_xlabel("concepts intervened on")
    axes.set_ylabel("task accuracy")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend()


def _run_colors(results: Mapping[str, Any]) -> dict[str, str]:
    """Give each run the colour of its position in ``results["runs"]``."""
    return {run["name"]: f"C{index % 10}" for index, run in enumerate(results["runs"])}


def _render(draw: Callable[[Figure], None]) -> bytes:
    """Create a figure, let ``draw`` fill it and return it as PNG bytes."""
    with matplotlib.style.context(["default", _STYLE]):
        figure = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _round_axis(axes: Axes) -> None:
    """Label the x axis as integer round numbers."""
    axes.set_xlabel("round")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


def _draw_curves(figure: Figure, by_run: dict[str, Series], colors: dict[str, str], metric: str) -> None:
    """Draw one line per run, with a ± std band where stds are reported."""
    axes = figure.subplots()
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
) -> None:
    """Draw one bar per run, labelled with its value, with error bars where stds exist."""
    axes = figure.subplots()
    positions = np.arange(len(by_run))
    values = np.array([value for value, _ in by_run.values()])
    stds = np.array([np.nan if std is None else std for _, std in by_run.values()])
    axes.bar(positions, values, color=[colors[name] for name in by_run], width=0.6)
    has_std = ~np.isnan(stds)
    axes.errorbar(
        positions[has_std], values[has_std], yerr=stds[has_std], fmt="none", ecolor="black", capsize=6
    )
    axes.set_xticks(positions, labels)
    axes.grid(axis="x", visible=False)
    axes.set_title(f"final {metric}")
    axes.set_ylabel(metric)


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
