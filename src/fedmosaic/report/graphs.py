"""Concept graphs as data: compare a learned graph with the true network, and lay it out in layers.

Graphs are given as ``parents`` mappings (node -> its parents), the form
F-CMs records in ``results.json``. These functions are shared by the report's
graph figure and by ``fedmosaic explore``.

Examples
--------
>>> learned = {"a": [], "b": ["a"], "c": ["b"]}
>>> truth = [("a", "b"), ("c", "b")]
>>> sorted(compare_edges(learned, truth).items())
[(('a', 'b'), 'correct'), (('b', 'c'), 'reversed')]
>>> layered_layout(learned)
{'a': (0.5, 0), 'b': (0.5, 1), 'c': (0.5, 2)}
"""

from collections.abc import Iterable, Mapping, Sequence

import networkx as nx

EDGE_STATUSES = ("correct", "reversed", "extra", "missing", "unknown")
"""How an edge of a learned graph relates to the true network's (``unknown`` without one)."""

Edge = tuple[str, str]


def edges_of(parents: Mapping[str, Sequence[str]]) -> list[Edge]:
    """Return the edges ``(parent, child)`` of a graph given by its parents, sorted."""
    return sorted((parent, child) for child, found in parents.items() for parent in found)


def compare_edges(parents: Mapping[str, Sequence[str]], true_edges: Iterable[Edge] | None) -> dict[Edge, str]:
    """Mark every edge of a learned graph against the true network's edges.

    Only true edges between two nodes of the learned graph are considered.

    Parameters
    ----------
    parents : Mapping[str, Sequence[str]]
        The learned graph: each node's parents.
    true_edges : Iterable[tuple[str, str]] or None
        The true network's edges ``(parent, child)``; None when the truth is not known.

    Returns
    -------
    dict[tuple[str, str], str]
        Every learned edge, marked ``correct``, ``reversed`` (the truth has it
        the other way) or ``extra``, and every true edge between learned nodes
        that the learned graph lacks in both directions, marked ``missing``;
        all learned edges are ``unknown`` without a truth.
    """
    learned = edges_of(parents)
    if true_edges is None:
        return dict.fromkeys(learned, "unknown")
    nodes = set(parents)
    truth = {(a, b) for a, b in true_edges if a in nodes and b in nodes}
    marks = {(a, b): "correct" if (a, b) in truth else "reversed" if (b, a) in truth else "extra" for a, b in learned}
    for a, b in sorted(truth):
        if (a, b) not in marks and (b, a) not in marks:
            marks[(a, b)] = "missing"
    return marks


def layered_layout(parents: Mapping[str, Sequence[str]]) -> dict[str, tuple[float, int]]:
    """Place each node on the layer of its longest path from a root, spread evenly across its layer.

    Parameters
    ----------
    parents : Mapping[str, Sequence[str]]
        A directed acyclic graph: each node's parents.

    Returns
    -------
    dict[str, tuple[float, int]]
        ``(x, layer)`` per node: ``x`` in (0, 1), centred, nodes of a layer
        in name order; ``layer`` 0 for the roots.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(parents)
    graph.add_edges_from(edges_of(parents))
    layers: dict[str, int] = {}
    for node in nx.topological_sort(graph):
        layers[node] = max((layers[parent] + 1 for parent in graph.predecessors(node)), default=0)
    positions: dict[str, tuple[float, int]] = {}
    for layer in sorted(set(layers.values())):
        members = sorted(node for node, found in layers.items() if found == layer)
        for index, node in enumerate(members):
            positions[node] = ((index + 0.5) / len(members), layer)
    return dict(sorted(positions.items(), key=lambda item: (item[1][1], item[1][0])))
