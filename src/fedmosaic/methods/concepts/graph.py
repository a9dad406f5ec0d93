"""Server-side fusion of the clients' causal graphs (F-CMs).

Each client states its belief about the causal structure among its own
concepts as a :class:`ConfidenceMatrix` ``A``: ``A[i, j]`` is its belief in the
edge ``i -> j`` and ``1 - A[i, j] - A[j, i]`` its belief that ``i`` and ``j``
are not adjacent. The server

1. fuses the matrices by a vote per pair of concepts, weighted by the clients'
   sample sizes (:func:`fuse_graphs`);
2. removes the cycles the vote may create, weakest consensus first, keeping a
   parent for the task (:func:`prune_cycles`);
3. hands the DAG to the graph models (:func:`to_networkx`,
   :func:`topological_order`).

:func:`aggregate_graph` does steps 1 and 2 in one call. Graphs are data
(named arrays) and every step is a plain function, testable on tiny graphs.

Two numbers closer than :data:`TIE_ATOL` count as equal everywhere (votes,
margins, scores): the fused sums are rounded differently when the clients come
in another order, and the result must not depend on that order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import networkx as nx
import numpy as np

from fedmosaic.data.confidence import TIE_ATOL, ConfidenceMatrix, check_names, read_only
from fedmosaic.errors import FedmosaicError

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class FusedGraph:
    """The server's graph over the global concepts, with the votes behind it.

    Parameters
    ----------
    names : tuple of str
        The global concepts; index ``i`` of every array is ``names[i]``.
    adjacency : numpy.ndarray of bool, shape (n, n)
        ``adjacency[i, j]`` is the edge ``names[i] -> names[j]``.
    scores : numpy.ndarray of float, shape (n, n)
        Fused belief in each edge, ``[A_bar]_ij``.
    none_scores : numpy.ndarray of float, shape (n, n)
        Fused belief that ``i`` and ``j`` are not adjacent (symmetric).
    margins : numpy.ndarray of float, shape (n, n)
        ``scores[i, j] - max(scores[j, i], none_scores[i, j])``: how far the edge
        beat (> 0) or missed (<= 0) the best competing alternative.

    Examples
    --------
    >>> g = fuse_graphs(["a", "b"], [ConfidenceMatrix.from_dag(["a", "b"], [("a", "b")])], [1.0])
    >>> g.edges, float(g.margins[0, 1])
    ([('a', 'b')], 1.0)
    """

    names: tuple[str, ...]
    adjacency: np.ndarray
    scores: np.ndarray
    none_scores: np.ndarray
    margins: np.ndarray

    def __post_init__(self) -> None:
        for field in ("adjacency", "scores", "none_scores", "margins"):
            object.__setattr__(self, field, read_only(np.asarray(getattr(self, field))))

    @property
    def edges(self) -> list[tuple[str, str]]:
        """The edges ``(source, target)``, in row-major order of the arrays."""
        return [(self.names[i], self.names[j]) for i, j in np.argwhere(self.adjacency)]


class RemovedEdge(NamedTuple):
    """An edge that :func:`prune_cycles` deleted, with its consensus margin."""

    src: str
    dst: str
    margin: float


def _client_shares(weights: Sequence[float], clients: int) -> np.ndarray:
    """``weights`` normalised to sum 1, after checking there is one > 0 per client."""
    shares = np.asarray(weights, dtype=np.float64)
    if shares.ndim != 1 or shares.size != clients:
        raise FedmosaicError(f"weights: need one per confidence matrix ({clients}), got shape {shares.shape}")
    if clients == 0:
        raise FedmosaicError("matrices: at least one client's confidence matrix is needed")
    bad = ~np.isfinite(shares) | (shares <= 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise FedmosaicError(f"weights: must be finite and > 0 (got {shares[k]:.6g} for client {k})")
    normalised: np.ndarray = shares / shares.sum()
    return normalised


def _global_positions(matrix: object, position: dict[str, int], client: int) -> np.ndarray:
    """Indices of the client's concepts among the global ones."""
    if not isinstance(matrix, ConfidenceMatrix):
        raise FedmosaicError(f"matrices[{client}]: must be a ConfidenceMatrix (got {type(matrix).__name__})")
    unknown = [name for name in matrix.names if name not in position]
    if unknown:
        raise FedmosaicError(f"matrices[{client}]: concepts not in global_names: {unknown}")
    return np.fromiter((position[name] for name in matrix.names), dtype=np.intp, count=len(matrix.names))


def fuse_graphs(
    global_names: Sequence[str], matrices: Sequence[ConfidenceMatrix], weights: Sequence[float]
) -> FusedGraph:
    """Weighted max-consensus of the clients' confidence matrices.

    With ``alpha_k = weights[k] / sum(weights)`` (over all given clients) and
    ``K_ij`` the clients holding both ``i`` and ``j``::

        scores[i, j]      = sum over k in K_ij of alpha_k * A_k[i, j]
        none_scores[i, j] = sum over k in K_ij of alpha_k * (1 - A_k[i, j] - A_k[j, i])

    A client lacking ``i`` or ``j`` does not vote on that pair. The edge
    ``i -> j`` is kept iff ``scores[i, j]`` is strictly the largest of
    ``scores[i, j]``, ``scores[j, i]`` and ``none_scores[i, j]``, by more than
    :data:`TIE_ATOL`. Hence ties are broken conservatively: an edge tied with
    "no edge" gives no edge, and ``i -> j`` tied with ``j -> i`` (above "no
    edge") gives no edge either. Pairs no client holds get no edge. The result
    does not depend on the order of the clients, of the names in a client's
    matrix, or of ``global_names`` (beyond the order of the arrays).

    Parameters
    ----------
    global_names : sequence of str
        The global concepts, unique; they fix the order of the arrays.
    matrices : sequence of ConfidenceMatrix
        One per client; every name must be in ``global_names``.
    weights : sequence of float
        One per client, > 0, e.g. its number of training samples.

    Returns
    -------
    FusedGraph
        May contain cycles; see :func:`prune_cycles`.

    Raises
    ------
    FedmosaicError
        On duplicate global names, unknown client concepts, or weights that
        are missing, not finite or not positive.

    Examples
    --------
    >>> up = ConfidenceMatrix.from_dag(["a", "b"], [("a", "b")])
    >>> down = ConfidenceMatrix.from_dag(["a", "b"], [("b", "a")])
    >>> fuse_graphs(["a", "b"], [up, down], [30, 10]).edges
    [('a', 'b')]
    """
    names = tuple(global_names)
    check_names(names, "global_names")
    shares = _client_shares(weights, len(matrices))
    n = len(names)
    position = {name: k for k, name in enumerate(names)}
    cells, beliefs, holders = [], [], []
    for client, (matrix, alpha) in enumerate(zip(matrices, shares, strict=True)):
        index = _global_positions(matrix, position, client)
        cells.append((index[:, None] * n + index).ravel())
        beliefs.append((alpha * matrix.values).ravel())
        holders.append(np.full(index.size**2, alpha))
    flat = np.concatenate(cells)
    scores = np.bincount(flat, weights=np.concatenate(beliefs), minlength=n * n).reshape(n, n)
    held = np.bincount(flat, weights=np.concatenate(holders), minlength=n * n).reshape(n, n)
    np.fill_diagonal(held, 0.0)
    none_scores = np.clip(held - scores - scores.T, 0.0, None)
    margins = scores - np.maximum(scores.T, none_scores)
    return FusedGraph(names, margins > TIE_ATOL, scores, none_scores, margins)


def _first_by(items: Iterable[T], value: Callable[[T], float], name: Callable[[T], tuple[str, ...]]) -> T:
    """The item of smallest ``value``; items within :data:`TIE_ATOL` of it are tied, broken by ``name``."""
    items = list(items)
    low = min(value(item) for item in items)
    return min((item for item in items if value(item) <= low + TIE_ATOL), key=name)


def _find_cycle(successors: list[list[int]], order: Sequence[int]) -> list[int] | None:
    """The nodes of a cycle ``v0 -> v1 -> ... -> v0``, or None for a DAG.

    Iterative depth-first search; roots and successors are visited in
    ``order``, so the cycle found depends only on the graph and that order.
    """
    on_path = [False] * len(successors)
    done = [False] * len(successors)
    for root in order:
        if done[root]:
            continue
        path, pending = [root], [iter(successors[root])]
        on_path[root] = True
        while path:
            for child in pending[-1]:
                if on_path[child]:  # back-edge path[-1] -> child closes a cycle
                    return path[path.index(child) :]
                if not done[child]:
                    path.append(child)
                    pending.append(iter(successors[child]))
                    on_path[child] = True
                    break
            else:
                node = path.pop()
                pending.pop()
                on_path[node] = False
                done[node] = True
    return None


def _reaches(successors: list[list[int]], start: int, goal: int) -> bool:
    """Whether a directed path leads from ``start`` to ``goal``."""
    seen, stack = {start}, [start]
    while stack:
        for child in successors[stack.pop()]:
            if child == goal:
                return True
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return start == goal


def _task_index(names: tuple[str, ...], task: str | None) -> int | None:
    """Position of ``task`` among ``names`` (None for no task)."""
    if task is None:
        return None
    if task not in names:
        raise FedmosaicError(f"task: {task!r} is not one of the graph's concepts")
    return names.index(task)


def _restore_task_parent(graph: FusedGraph, adjacency: np.ndarray, successors: list[list[int]], task: int) -> None:
    """Give a parentless ``task`` its best-scored acyclic candidate parent, in place."""
    names = graph.names
    above: list[int] = np.flatnonzero(graph.scores[:, task] > TIE_ATOL).tolist()
    candidates = [u for u in above if not _reaches(successors, task, u)]
    if candidates:
        parent = _first_by(candidates, lambda u: -graph.scores[u, task], lambda u: (names[u],))
        adjacency[parent, task] = True
        successors[parent].append(task)


def prune_cycles(graph: FusedGraph, task: str | None = None) -> tuple[FusedGraph, list[RemovedEdge]]:
    """Remove the cycles of ``graph``, weakest consensus first.

    While an iterative depth-first search (roots and children visited in name
    order) finds a back-edge, the edge of the cycle it closes with the smallest
    margin is deleted; margins within :data:`TIE_ATOL` are tied and the edge
    with the smaller ``(source, target)`` names goes. The task's last incoming
    edge is never deleted (a cycle always has another edge that can go).

    If afterwards the task has no parent (only possible when the vote gave it
    none), the candidate edge ``u -> task`` with the highest positive fused
    score whose addition creates no cycle is added back (ties by name; its
    margin, <= 0, stays visible in ``margins``). If there is no such candidate
    the task stays a root.

    Parameters
    ----------
    graph : FusedGraph
        Typically the output of :func:`fuse_graphs`; it is not modified.
    task : str or None, default None
        The task concept, or None for no task rule.

    Returns
    -------
    dag : FusedGraph
        ``graph`` with the new adjacency; scores and margins unchanged.
    removed : list of RemovedEdge
        The deleted edges ``(src, dst, margin)``, in the order of deletion.

    Raises
    ------
    FedmosaicError
        If ``task`` is not one of the graph's concepts.

    Examples
    --------
    >>> pair = lambda a, b: ConfidenceMatrix.from_dag([a, b], [(a, b)])
    >>> g = fuse_graphs(["a", "b", "c"], [pair("a", "b"), pair("b", "c"), pair("c", "a")], [3, 2, 1])
    >>> dag, removed = prune_cycles(g)
    >>> dag.edges, removed[0][:2]
    ([('a', 'b'), ('b', 'c')], ('c', 'a'))
    """
    names = graph.names
    task_index = _task_index(names, task)
    adjacency = np.array(graph.adjacency, dtype=bool)
    order = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.intp)
    successors = [order[np.flatnonzero(row[order])].tolist() for row in adjacency]
    removed: list[RemovedEdge] = []
    while (cycle := _find_cycle(successors, order.tolist())) is not None:
        edges = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
        if task_index is not None and adjacency[:, task_index].sum() == 1:
            edges = [edge for edge in edges if edge[1] != task_index]
        src, dst = _first_by(edges, lambda e: graph.margins[e], lambda e: (names[e[0]], names[e[1]]))
        adjacency[src, dst] = False
        successors[src].remove(dst)
        removed.append(RemovedEdge(names[src], names[dst], float(graph.margins[src, dst])))
    if task_index is not None and not adjacency[:, task_index].any():
        _restore_task_parent(graph, adjacency, successors, task_index)
    return dataclasses.replace(graph, adjacency=adjacency), removed


def aggregate_graph(
    global_names: Sequence[str],
    matrices: Sequence[ConfidenceMatrix],
    weights: Sequence[float],
    task: str | None = None,
) -> tuple[FusedGraph, list[RemovedEdge]]:
    """Fuse the clients' matrices (:func:`fuse_graphs`), then prune (:func:`prune_cycles`).

    Parameters
    ----------
    global_names, matrices, weights
        As in :func:`fuse_graphs`.
    task : str or None, default None
        As in :func:`prune_cycles`.

    Returns
    -------
    dag : FusedGraph
        The acyclic global graph.
    removed : list of RemovedEdge
        The edges deleted to break cycles.

    Examples
    --------
    >>> m = ConfidenceMatrix.from_dag(["x", "y"], [("x", "y")])
    >>> dag, removed = aggregate_graph(["x", "y"], [m], [100], task="y")
    >>> dag.edges, removed
    ([('x', 'y')], [])
    """
    return prune_cycles(fuse_graphs(global_names, matrices, weights), task)


def consensus_record(dag: FusedGraph, removed: Sequence[RemovedEdge]) -> dict[str, Any]:
    """Why each edge of a fused graph is there: JSON-ready edges with their score and margin.

    Parameters
    ----------
    dag : FusedGraph
        The pruned graph (:func:`aggregate_graph`).
    removed : sequence of RemovedEdge
        The edges cycle pruning deleted.

    Returns
    -------
    dict
        ``nodes``; ``edges``: each kept edge's ``source``, ``target``,
        ``score`` and ``margin`` (a margin <= 0 marks an edge restored as the
        task's parent); ``removed``: the same for each pruned edge.

    Examples
    --------
    >>> m = ConfidenceMatrix.from_dag(["x", "y"], [("x", "y")])
    >>> consensus_record(*aggregate_graph(["x", "y"], [m], [100], task="y"))["edges"]
    [{'source': 'x', 'target': 'y', 'score': 1.0, 'margin': 1.0}]
    """
    index = {name: k for k, name in enumerate(dag.names)}

    def edge(src: str, dst: str) -> dict[str, Any]:
        i, j = index[src], index[dst]
        return {"source": src, "target": dst, "score": float(dag.scores[i, j]), "margin": float(dag.margins[i, j])}

    return {
        "nodes": list(dag.names),
        "edges": [edge(src, dst) for src, dst in dag.edges],
        "removed": [edge(cut.src, cut.dst) for cut in removed],
    }


def to_networkx(graph: FusedGraph) -> nx.DiGraph:
    """``graph`` as a :class:`networkx.DiGraph`.

    Every concept is a node, in ``graph.names`` order; every edge carries its
    fused ``score`` and ``margin``.

    Examples
    --------
    >>> m = ConfidenceMatrix.from_dag(["x", "y", "z"], [("x", "y")])
    >>> g = to_networkx(fuse_graphs(["x", "y", "z"], [m], [1]))
    >>> list(g.nodes), list(g.edges(data="score"))
    (['x', 'y', 'z'], [('x', 'y', 1.0)])
    """
    digraph = nx.DiGraph()
    digraph.add_nodes_from(graph.names)
    digraph.add_edges_from(
        (graph.names[i], graph.names[j], {"score": float(graph.scores[i, j]), "margin": float(graph.margins[i, j])})
        for i, j in np.argwhere(graph.adjacency)
    )
    return digraph


def topological_order(graph: FusedGraph) -> list[str]:
    """The concepts in topological order, the smallest name first among the ready ones.

    Raises
    ------
    FedmosaicError
        If ``graph`` has a cycle (prune it with :func:`prune_cycles` first).

    Examples
    --------
    >>> m = ConfidenceMatrix.from_dag(["c", "b", "a"], [("c", "a")])
    >>> topological_order(fuse_graphs(["a", "b", "c"], [m], [1]))
    ['b', 'c', 'a']
    """
    try:
        return list(nx.lexicographical_topological_sort(to_networkx(graph)))
    except nx.NetworkXUnfeasible:
        raise FedmosaicError("graph has a cycle: prune it with prune_cycles first") from None
