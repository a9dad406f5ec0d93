"""Figures of an F-CMs run: its fused concept graph and which client labels which concept."""

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.typing import LineStyleType

from fedmosaic.report.graphs import Edge, layered_layout
from fedmosaic.report.plots import FIGSIZE, render

EDGE_STYLES: dict[str, tuple[str, LineStyleType]] = {
    "correct": ("#1a7f37", "-"),
    "reversed": ("#bc4c00", "-"),
    "extra": ("#cf222e", "--"),
    "missing": ("#8c959f", ":"),
    "unknown": ("#24292f", "-"),
}
"""Colour and line style of each edge status (see :func:`fedmosaic.report.graphs.compare_edges`)."""
BEND = 0.08
"""How far edges bow from the straight line (matplotlib's ``arc3`` radius), so that crossing edges part."""


def fused_graph(
    parents: Mapping[str, Sequence[str]],
    marks: Mapping[Edge, str],
    task: str,
    scores: Mapping[Edge, float] | None = None,
) -> bytes:
    """Draw a concept graph as a layered DAG, its edges styled by their status against the truth.

    Parameters
    ----------
    parents : Mapping[str, Sequence[str]]
        The graph: each node's parents.
    marks : Mapping[tuple[str, str], str]
        Status of every edge to draw (learned edges and missing true ones), from
        :func:`~fedmosaic.report.graphs.compare_edges`.
    task : str
        The task node, drawn filled.
    scores : Mapping[tuple[str, str], float], optional
        The clients' consensus behind each edge, written at its middle.

    Returns
    -------
    bytes
        The figure as PNG, roots at the top.
    """
    return render(partial(_draw_graph, positions=layered_layout(parents), marks=marks, task=task, scores=scores or {}))


def _draw_graph(
    figure: Figure,
    positions: dict[str, tuple[float, int]],
    marks: Mapping[Edge, str],
    task: str,
    scores: Mapping[Edge, float],
) -> None:
    axes = figure.subplots()
    depth = max((layer for _, layer in positions.values()), default=0)
    points = {node: (x, 1.0 - layer / max(depth, 1)) for node, (x, layer) in positions.items()}
    for (parent, child), status in marks.items():
        colour, style = EDGE_STYLES[status]
        axes.add_patch(
            FancyArrowPatch(
                points[parent],
                points[child],
                arrowstyle="-|>",
                mutation_scale=14,
                color=colour,
                linestyle=style,
                linewidth=1.6,
                shrinkA=16,
                shrinkB=16,
                connectionstyle=f"arc3,rad={BEND}",
            )
        )
        if (parent, child) in scores:
            (x0, y0), (x1, y1) = points[parent], points[child]
            # The middle of the arc: half the control point's offset (rad) from the chord's middle.
            x, y = (x0 + x1) / 2 + BEND / 2 * (y1 - y0), (y0 + y1) / 2 - BEND / 2 * (x1 - x0)
            axes.text(
                x,
                y,
                f"{scores[(parent, child)]:.2f}",
                fontsize="x-small",
                color=colour,
                ha="center",
                va="center",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
            )
    for node, (x, y) in points.items():
        axes.text(
            x,
            y,
            node,
            ha="center",
            va="center",
            fontsize="medium",
            color="white" if node == task else "black",
            bbox={
                "boxstyle": "round,pad=0.4",
                "facecolor": "#0969da" if node == task else "#f6f8fa",
                "edgecolor": "#57606a",
            },
        )
    axes.set_xlim(-0.05, 1.05)
    axes.set_ylim(-0.12, 1.12)
    axes.axis("off")
    shown = [status for status in EDGE_STYLES if status in marks.values()]
    handles = [Line2D([], [], color=EDGE_STYLES[s][0], linestyle=EDGE_STYLES[s][1], label=s) for s in shown]
    axes.legend(handles=handles, loc="lower right", fontsize="small")
    axes.set_title(f"fused concept graph (task {task} filled)")


def client_concepts(registry: Mapping[str, Mapping[str, Any]], nodes: Sequence[str]) -> bytes:
    """Draw the client × concept matrix: who labels which concept, shaded by the round it joined.

    Parameters
    ----------
    registry : Mapping[str, Mapping[str, Any]]
        Per client id: its ``concepts`` (names) and the round it ``joined``.
    nodes : Sequence[str]
        The concepts to show, as columns.

    Returns
    -------
    bytes
        The figure as PNG: one row per client, a cell filled where it labels
        the concept, labelled by its joining round.
    """
    clients = sorted(registry, key=int)
    joined = np.array([float(registry[c].get("joined", 1)) for c in clients])
    labels = np.array([[node in registry[c]["concepts"] for node in nodes] for c in clients], dtype=float)
    height = min(max(2.5, 0.22 * len(clients) + 1.4), 9.0)
    return render(
        partial(_draw_matrix, clients=clients, nodes=list(nodes), labels=labels, joined=joined), (FIGSIZE[0], height)
    )


def _draw_matrix(figure: Figure, clients: list[str], nodes: list[str], labels: np.ndarray, joined: np.ndarray) -> None:
    axes = figure.subplots()
    rounds = sorted(set(joined.tolist()))
    shade = np.where(labels > 0, 1 + np.searchsorted(rounds, joined)[:, None], 0)
    axes.imshow(shade, aspect="auto", cmap="Blues", vmin=0, vmax=len(rounds) + 0.5, interpolation="nearest")
    axes.set_xticks(range(len(nodes)), nodes, rotation=30, ha="right")
    axes.set_yticks(
        range(len(clients)),
        [f"client {c} (round {int(j)})" for c, j in zip(clients, joined, strict=True)],
        fontsize="small",
    )
    axes.grid(False)
    axes.set_title("concepts each client labels (darker: joined later)")
