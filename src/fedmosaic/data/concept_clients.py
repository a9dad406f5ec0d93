"""Client layout for F-CMs: which concepts each client labels, when it joins, its local graph.

Following the F-CMs reference setting:

* :func:`concept_subsets` draws the concept subsets: connected subgraphs of
  the task's ancestral graph, each a union of backward paths from the task to
  root ancestors, together covering every ancestral node and edge. Two
  *additional* nodes appear only in one or a few extra subsets, which go only
  to late-joining clients (concept drift).
* :func:`assign_clients` gives each client a subset, a contiguous chunk of
  the train and validation rows, and its arrival round.
* :func:`oracle_confidence` and :func:`learned_confidence`
  (:mod:`fedmosaic.data.local_confidence`) give a client's
  local confidence matrix ``A`` over its concepts: ``A[i, j]`` is the
  confidence in the edge ``names[i] -> names[j]``, with ``A[i, j] + A[j, i]
  <= 1`` (the rest is the confidence that there is no edge).

Graphs are plain data: a sequence of ``(parent, child)`` name pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from fedmosaic.data.confidence import Edge
from fedmosaic.data.local_confidence import learned_confidence, oracle_confidence
from fedmosaic.errors import ConfigError, FedmosaicError

MAX_ADDITIONAL_DRAWS = 1000
"""How many draws :func:`concept_subsets` tries to find additional nodes that leave the task a parent."""
MAX_PATH_DRAWS = 20
"""How many times :func:`concept_subsets` redraws a starting subset that repeats an earlier one."""

__all__ = [
    "MAX_ADDITIONAL_DRAWS",
    "MAX_PATH_DRAWS",
    "ConceptClient",
    "ConceptSubsets",
    "ancestral_graph",
    "assign_clients",
    "concept_subsets",
    "corrupted_clients",
    "cover_every_node",
    "learned_confidence",
    "oracle_confidence",
]


@dataclass(frozen=True)
class ConceptSubsets:
    """The concept subsets clients are given.

    Parameters
    ----------
    task : str
        The task node.
    subsets : tuple[tuple[str, ...], ...]
        Each subset's concepts in topological order (a subset may hold the task).
    additional : tuple[bool, ...]
        For each subset, whether it holds the additional nodes.
    additional_nodes : tuple[str, ...]
        Ancestors of the task found only in the additional subsets.

    Raises
    ------
    FedmosaicError
        If the flags do not match the subsets, or every subset is additional.

    Examples
    --------
    >>> layout = ConceptSubsets("y", (("a", "y"), ("a", "b", "y")), (False, True), ("b",))
    >>> [subset for subset, extra in zip(layout.subsets, layout.additional) if not extra]
    [('a', 'y')]
    """

    task: str
    subsets: tuple[tuple[str, ...], ...]
    additional: tuple[bool, ...]
    additional_nodes: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.additional) != len(self.subsets) or all(self.additional):
            raise FedmosaicError("ConceptSubsets.additional needs one flag per subset, at least one of them False")


@dataclass(frozen=True, eq=False)
class ConceptClient:
    """What one client holds.

    Parameters
    ----------
    client_id : int
        From 0 to ``num_clients - 1``.
    concepts : tuple[str, ...]
        The concepts it has labels for (may include the task).
    has_task : bool
        Whether it has task labels.
    train_rows, val_rows : np.ndarray
        int64 positions of its rows in the train and validation splits.
    joins_at : int
        The round (counted from 1) from which it takes part.

    Examples
    --------
    >>> import numpy as np
    >>> client = ConceptClient(3, ("a", "y"), True, np.arange(5, 10), np.arange(1, 2), joins_at=10)
    >>> client.has_task, len(client.train_rows)
    (True, 5)
    """

    client_id: int
    concepts: tuple[str, ...]
    has_task: bool
    train_rows: np.ndarray
    val_rows: np.ndarray
    joins_at: int


def ancestral_graph(edges: Iterable[Edge], task: str) -> tuple[tuple[str, ...], tuple[Edge, ...]]:
    """The task's ancestors and the edges among them and the task.

    Parameters
    ----------
    edges : Iterable[tuple[str, str]]
        ``(parent, child)`` pairs of a DAG.
    task : str
        A node of the DAG.

    Returns
    -------
    nodes : tuple[str, ...]
        The ancestors and the task, in lexicographic topological order (the
        task last when it is a leaf).
    edges : tuple[tuple[str, str], ...]
        The edges whose both ends are in ``nodes``, sorted.

    Raises
    ------
    ConfigError
        If ``task`` is not a node (field ``data.task``).

    Examples
    --------
    >>> ancestral_graph([("a", "b"), ("b", "y"), ("c", "y"), ("y", "z"), ("d", "z")], "y")
    (('a', 'b', 'c', 'y'), (('a', 'b'), ('b', 'y'), ('c', 'y')))
    """
    graph = _ancestral_digraph(_digraph(edges, task), task)
    return tuple(nx.lexicographical_topological_sort(graph)), tuple(sorted(graph.edges()))


def concept_subsets(
    edges: Iterable[Edge],
    task: str,
    rng: np.random.Generator,
    num_subgraphs_range: tuple[int, int] = (2, 6),
    num_additional_nodes: int = 2,
    additional_subsets: int = 1,
    drop_task_probability: float = 0.5,
) -> ConceptSubsets:
    """Draw connected concept subsets that together cover the task's ancestral graph.

    Works on the ancestral graph (the task, its ancestors and the edges
    among them). A *path* is a backward path from the task to a root, drawn
    as a walk to a uniformly drawn parent at each step; a *path through* a
    node or an edge walks from it to a uniformly drawn child until the task,
    and from it (its tail) to a uniformly drawn parent until a root.

    1. *Additional nodes*: ``num_additional_nodes`` ancestors drawn at
       random, redrawn while they include every parent of the task.
    2. *Base subsets* live in the *base graph*: the ancestral graph without
       the additional nodes, cut to the nodes that still reach the task; its
       roots include the nodes whose only parents were additional (to early
       clients an additional node is simply unknown). Their number is drawn
       uniformly from ``num_subgraphs_range`` (inclusive); each starts as one
       path. Then each base-graph edge that no subset holds yet, in random
       order, gets a path through it added to a random base subset.
    3. *Additional subsets*: ``additional_subsets`` extra subsets, each
       starting as the union of a path through every additional node. Each
       ancestral edge still uncovered (one touching an additional node, or
       cut off from the task without them), in random order, gets a path
       through it added to a random additional subset.
    4. *Dropping the task*: in turn, a subset loses the task with probability
       ``drop_task_probability`` when (a) every task parent it holds is held
       together with the task by another subset, so no edge into the task
       loses its last subset (as in the reference code), and (b) at least
       two other concepts remain and stay connected (added here, so every
       subset stays a connected subgraph with an edge).

    A starting draw that repeats an earlier subset of its kind is redrawn,
    up to :data:`MAX_PATH_DRAWS` times; a graph with few distinct paths
    (asia) can still give equal subsets, which are kept so that the counts
    are as requested. Every subset is a connected union of paths holding a
    parent of the task, base subsets never hold an additional node,
    additional subsets hold all of them, and together the subsets cover
    every ancestral node and edge.

    Parameters
    ----------
    edges : Iterable[tuple[str, str]]
        ``(parent, child)`` pairs of the true DAG.
    task : str
        The task node.
    rng : np.random.Generator
        Source of randomness.
    num_subgraphs_range : tuple[int, int], optional
        Smallest and largest number of base subsets.
    num_additional_nodes : int, optional
        Number of additional nodes (0 for none); fewer than the task's ancestors.
    additional_subsets : int, optional
        Number of subsets holding the additional nodes (1 for asia and
        hailfinder in the reference, 3 for the others); ignored without
        additional nodes.
    drop_task_probability : float, optional
        Probability of dropping the task from a subset where allowed.

    Returns
    -------
    ConceptSubsets
        Base subsets first, then the additional ones.

    Raises
    ------
    ConfigError
        If the task is unknown or has too few ancestors (``data.task``), or a
        parameter is out of range (``partition.<parameter>``).

    Examples
    --------
    >>> import numpy as np
    >>> edges = [("a", "c"), ("b", "c"), ("c", "y"), ("d", "y")]
    >>> rng = np.random.default_rng(0)
    >>> layout = concept_subsets(edges, "y", rng, num_subgraphs_range=(2, 2), num_additional_nodes=1)
    >>> sorted(set().union(*layout.subsets)), layout.additional.count(True)
    (['a', 'b', 'c', 'd', 'y'], 1)
    """
    _check_subset_parameters(num_subgraphs_range, num_additional_nodes, additional_subsets, drop_task_probability)
    graph = _ancestral_digraph(_digraph(edges, task), task)
    if graph.number_of_nodes() <= num_additional_nodes + 1:
        raise ConfigError(
            "data.task",
            f"task {task!r} has {graph.number_of_nodes() - 1} ancestors; concept subsets need more "
            f"than num_additional_nodes={num_additional_nodes}",
        )
    extra = _pick_additional_nodes(graph, task, num_additional_nodes, rng)
    base_graph = _ancestral_digraph(graph.subgraph(set(graph) - extra), task)
    count = int(rng.integers(num_subgraphs_range[0], num_subgraphs_range[1] + 1))
    base = _distinct_draws(lambda: _walk_to_root(base_graph, task, rng), count)
    _cover_edges(base, base_graph, task, rng)
    added = _distinct_draws(
        lambda: set().union(*(_path_through(graph, node, task, rng) for node in sorted(extra))),
        additional_subsets if extra else 0,
    )
    _cover_edges(added, graph, task, rng, covered=base)
    subsets = base + added
    _drop_task(subsets, graph, task, drop_task_probability, rng)
    order = {node: rank for rank, node in enumerate(nx.lexicographical_topological_sort(graph))}
    return ConceptSubsets(
        task=task,
        subsets=tuple(tuple(sorted(subset, key=order.__getitem__)) for subset in subsets),
        additional=(False,) * len(base) + (True,) * len(added),
        additional_nodes=tuple(sorted(extra, key=order.__getitem__)),
    )


def cover_every_node(layout: ConceptSubsets, nodes: Sequence[str], rng: np.random.Generator) -> ConceptSubsets:
    """``layout`` with each of ``nodes`` that no subset holds added to one subset drawn uniformly.

    The subsets of :func:`concept_subsets` cover the task's ancestral graph;
    the reference code's clients together label every node of the network,
    the task's non-ancestors included. Added nodes follow a subset's own
    concepts, in the order of ``nodes``.

    Examples
    --------
    >>> import numpy as np
    >>> layout = ConceptSubsets("y", (("a", "y"), ("a", "b", "y")), (False, True), ("b",))
    >>> covered = cover_every_node(layout, ["a", "b", "y", "z"], np.random.default_rng(0))
    >>> sorted(set().union(*covered.subsets))
    ['a', 'b', 'y', 'z']
    """
    subsets = [list(subset) for subset in layout.subsets]
    for node in nodes:
        if not any(node in subset for subset in subsets):
            subsets[int(rng.integers(len(subsets)))].append(node)
    return replace(layout, subsets=tuple(tuple(subset) for subset in subsets))


def _check_subset_parameters(
    num_subgraphs_range: tuple[int, int], num_additional_nodes: int, additional_subsets: int, drop: float
) -> None:
    low, high = num_subgraphs_range
    if not 1 <= low <= high:
        raise ConfigError(
            "partition.num_subgraphs_range",
            f"must be (low, high) with 1 <= low <= high (got {num_subgraphs_range})",
        )
    if num_additional_nodes < 0:
        raise ConfigError("partition.num_additional_nodes", f"must be >= 0 (got {num_additional_nodes})")
    if num_additional_nodes and additional_subsets < 1:
        raise ConfigError(
            "partition.additional_subsets",
            f"must be >= 1 with additional nodes (got {additional_subsets})",
        )
    if not 0 <= drop <= 1:
        raise ConfigError("partition.drop_task_probability", f"must be in [0, 1] (got {drop})")


def _digraph(edges: Iterable[Edge], task: str) -> nx.DiGraph:
    graph = nx.DiGraph(list(edges))
    if task not in graph:
        raise ConfigError("data.task", f"task {task!r} is not a node of the graph")
    return graph


def _ancestral_digraph(graph: nx.DiGraph, task: str) -> nx.DiGraph:
    return graph.subgraph(nx.ancestors(graph, task) | {task}).copy()


def _pick_additional_nodes(graph: nx.DiGraph, task: str, count: int, rng: np.random.Generator) -> set[str]:
    """Draw ``count`` ancestors of the task, not all of its parents."""
    candidates = sorted(set(graph) - {task})
    for _ in range(MAX_ADDITIONAL_DRAWS):
        picked = {str(node) for node in rng.choice(candidates, size=count, replace=False)}
        if set(graph.predecessors(task)) - picked:
            return picked
    raise ConfigError(
        "partition.num_additional_nodes",
        f"no draw of {count} additional nodes out of {MAX_ADDITIONAL_DRAWS} leaves task {task!r} a parent; lower it",
    )


def _distinct_draws(draw: Callable[[], set[str]], count: int) -> list[set[str]]:
    """``count`` draws, each redrawn (up to :data:`MAX_PATH_DRAWS` times) while it repeats one before."""
    drawn: list[set[str]] = []
    for _ in range(count):
        subset = draw()
        for _ in range(MAX_PATH_DRAWS):
            if subset not in drawn:
                break
            subset = draw()
        drawn.append(subset)
    return drawn


def _walk_to_root(graph: nx.DiGraph, start: str, rng: np.random.Generator) -> set[str]:
    """Nodes met walking from ``start`` to a uniformly drawn parent until a root of ``graph``."""
    path, node = {start}, start
    while parents := sorted(graph.predecessors(node)):
        node = parents[int(rng.integers(len(parents)))]
        path.add(node)
    return path


def _walk_to_task(graph: nx.DiGraph, start: str, task: str, rng: np.random.Generator) -> set[str]:
    """Nodes met walking from ``start`` to a uniformly drawn child until ``task`` (all lead to it)."""
    path, node = {start}, start
    while node != task:
        children = sorted(graph.successors(node))
        node = children[int(rng.integers(len(children)))]
        path.add(node)
    return path


def _path_through(graph: nx.DiGraph, node: str, task: str, rng: np.random.Generator) -> set[str]:
    return _walk_to_task(graph, node, task, rng) | _walk_to_root(graph, node, rng)


def _cover_edges(
    subsets: list[set[str]],
    graph: nx.DiGraph,
    task: str,
    rng: np.random.Generator,
    covered: Sequence[set[str]] = (),
) -> None:
    """Grow random ``subsets`` by paths until they and ``covered`` hold every edge of ``graph``."""
    if not subsets:
        return
    edges = sorted(graph.edges())
    for index in rng.permutation(len(edges)):
        parent, child = edges[index]
        if not any({parent, child} <= subset for subset in (*subsets, *covered)):
            path = _walk_to_task(graph, child, task, rng) | _walk_to_root(graph, parent, rng)
            subsets[int(rng.integers(len(subsets)))] |= path


def _drop_task(
    subsets: list[set[str]], graph: nx.DiGraph, task: str, probability: float, rng: np.random.Generator
) -> None:
    """Drop the task from each subset in turn, where allowed, with ``probability``."""
    for index, subset in enumerate(subsets):
        others = [other for position, other in enumerate(subsets) if position != index and task in other]
        parents = [node for node in graph.predecessors(task) if node in subset]
        keeps_edges = all(any(parent in other for other in others) for parent in parents)
        rest = subset - {task}
        allowed = keeps_edges and len(rest) >= 2 and nx.is_weakly_connected(graph.subgraph(rest))
        if allowed and rng.random() < probability:
            subset.discard(task)


def assign_clients(
    subsets: ConceptSubsets,
    n_train: int,
    n_val: int,
    rng: np.random.Generator,
    *,
    num_clients: int = 20,
    initial: int = 10,
    join_round: int = 10,
    additional_share: float = 0.5,
) -> list[ConceptClient]:
    """Give each client a concept subset, its rows and its arrival round.

    Clients ``0 .. initial - 1`` take part from round 1, the others from
    ``join_round``. Client ``k`` holds chunk ``k`` of the train rows and of the
    validation rows, each split cut into ``num_clients`` contiguous chunks.
    Subsets with the additional nodes go only to late clients: a random
    ``additional_share`` of them (at least one per additional subset), which
    cycle over the additional subsets in random order; every other client
    cycles over the base subsets in random order (the initial clients
    first), so every subset is used.

    Parameters
    ----------
    subsets : ConceptSubsets
        From :func:`concept_subsets`.
    n_train, n_val : int
        Rows in the train and validation splits (at least ``num_clients`` each).
    rng : np.random.Generator
        Source of randomness.
    num_clients : int, optional
        Number of clients.
    initial : int, optional
        Clients present from round 1, from 1 to ``num_clients``.
    join_round : int, optional
        Arrival round of the other clients (>= 1).
    additional_share : float, optional
        Share of late clients given an additional subset, in [0, 1].

    Returns
    -------
    list[ConceptClient]
        In client id order.

    Raises
    ------
    ConfigError
        If a count is out of range or the clients are too few to use every
        subset (fields ``partition.*``).

    Examples
    --------
    >>> import numpy as np
    >>> subsets = (("a", "y"), ("b", "y"), ("a", "c", "y"))
    >>> layout = ConceptSubsets("y", subsets, additional=(False, False, True), additional_nodes=("c",))
    >>> rng = np.random.default_rng(0)
    >>> clients = assign_clients(layout, 40, 8, rng, num_clients=4, initial=2, join_round=5)
    >>> [(c.client_id, c.joins_at, len(c.train_rows), c.has_task) for c in clients][:2]
    [(0, 1, 10, True), (1, 1, 10, True)]
    >>> clients[2].concepts == ("a", "c", "y") or clients[3].concepts == ("a", "c", "y")
    True
    """
    _check_client_counts(num_clients, initial, join_round, n_train, n_val)
    choice = _deal_subsets(subsets.additional, num_clients, initial, additional_share, rng)
    train_chunks = np.array_split(np.arange(n_train, dtype=np.int64), num_clients)
    val_chunks = np.array_split(np.arange(n_val, dtype=np.int64), num_clients)
    return [
        ConceptClient(
            client_id=client,
            concepts=subsets.subsets[choice[client]],
            has_task=subsets.task in subsets.subsets[choice[client]],
            train_rows=train_chunks[client],
            val_rows=val_chunks[client],
            joins_at=1 if client < initial else join_round,
        )
        for client in range(num_clients)
    ]


def _check_client_counts(num_clients: int, initial: int, join_round: int, n_train: int, n_val: int) -> None:
    if not 1 <= initial <= num_clients:
        raise ConfigError("concepts.initial_clients", f"must be from 1 to num_clients={num_clients} (got {initial})")
    if join_round < 1:
        raise ConfigError("concepts.join_round", f"must be >= 1 (got {join_round})")
    if min(n_train, n_val) < num_clients:
        raise ConfigError(
            "concepts.num_clients",
            f"must be at most the rows of each split (got {num_clients} clients for {n_train} train "
            f"and {n_val} validation rows)",
        )


def _deal_subsets(
    additional: Sequence[bool], num_clients: int, initial: int, share: float, rng: np.random.Generator
) -> list[int]:
    """The subset index of each client, dealt as :func:`assign_clients` describes."""
    if not 0 <= share <= 1:
        raise ConfigError("partition.additional_share", f"must be in [0, 1] (got {share})")
    base = [index for index, flag in enumerate(additional) if not flag]
    added = [index for index, flag in enumerate(additional) if flag]
    late = num_clients - initial
    if late < len(added):
        raise ConfigError(
            "concepts.initial_clients",
            f"leaves {late} late clients for {len(added)} additional subsets; each needs one",
        )
    n_added = max(round(share * late), len(added)) if added else 0
    if num_clients - n_added < len(base):
        raise ConfigError(
            "concepts.num_clients",
            f"leaves {num_clients - n_added} clients without additional nodes for {len(base)} base "
            "subsets; each needs one",
        )
    added_clients = {initial + int(k) for k in rng.choice(late, size=n_added, replace=False)}
    pools = {
        False: [base[int(k)] for k in rng.permutation(len(base))],
        True: [added[int(k)] for k in rng.permutation(len(added))],
    }
    dealt = {False: 0, True: 0}
    choice = []
    for client in range(num_clients):
        kind = client in added_clients
        choice.append(pools[kind][dealt[kind] % len(pools[kind])])
        dealt[kind] += 1
    return choice


def corrupted_clients(num_clients: int, rng: np.random.Generator, fraction: float = 0.1) -> tuple[int, ...]:
    """Pick the clients whose oracle graph is corrupted: ``round(fraction * num_clients)`` at random.

    Examples
    --------
    >>> import numpy as np
    >>> len(corrupted_clients(20, np.random.default_rng(0)))
    2
    """
    if not 0 <= fraction <= 1:
        raise ConfigError("partition.corrupted_fraction", f"must be in [0, 1] (got {fraction})")
    return tuple(sorted(int(k) for k in rng.choice(num_clients, size=round(fraction * num_clients), replace=False)))
