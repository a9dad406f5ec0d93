"""Tests of the F-CMs causal-graph fusion: vote rule, ties, cycle pruning, validation."""

from __future__ import annotations

import functools
import gzip
import itertools
import re
from importlib.resources import files

import networkx as nx
import numpy as np
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.methods.concepts.graph import (
    ConfidenceMatrix,
    FusedGraph,
    RemovedEdge,
    aggregate_graph,
    fuse_graphs,
    prune_cycles,
    to_networkx,
    topological_order,
)


def _matrix(names: str, beliefs: dict[str, float]) -> ConfidenceMatrix:
    """A client over single-letter concepts; ``{"ab": 0.6}`` is a belief of 0.6 in a -> b."""
    values = np.zeros((len(names), len(names)))
    for pair, belief in beliefs.items():
        values[names.index(pair[0]), names.index(pair[1])] = belief
    return ConfidenceMatrix(tuple(names), values)


def _edge(pair: str) -> ConfidenceMatrix:
    """A client holding the two concepts of ``pair`` and sure of the edge between them."""
    return _matrix(pair, {pair: 1.0})


def _score(graph: FusedGraph, array: np.ndarray, src: str, dst: str) -> float:
    return float(array[graph.names.index(src), graph.names.index(dst)])


# ---------------------------------------------------------------- vote rule


def test_fusion_matches_hand_computed_weighted_vote() -> None:
    # Prepare: alpha = (0.25, 0.75); the second client lacks c.
    first = _matrix("abc", {"ab": 0.6, "ba": 0.2, "bc": 0.6, "ca": 0.3})
    second = _matrix("ab", {"ab": 0.2, "ba": 0.7})

    # Execute
    graph = fuse_graphs("abc", [first, second], [1, 3])

    # Assert: a-b: 0.30 / 0.575 / none 0.125; b-c: 0.15 / 0 / 0.10; a-c: 0 / 0.075 / 0.175
    assert graph.scores == pytest.approx(np.array([[0, 0.3, 0], [0.575, 0, 0.15], [0.075, 0, 0]]))
    assert graph.none_scores == pytest.approx(np.array([[0, 0.125, 0.175], [0.125, 0, 0.1], [0.175, 0.1, 0]]))
    assert graph.edges == [("b", "a"), ("b", "c")]
    assert _score(graph, graph.margins, "b", "a") == pytest.approx(0.275)
    assert _score(graph, graph.margins, "b", "c") == pytest.approx(0.05)
    assert _score(graph, graph.margins, "c", "a") == pytest.approx(-0.1)


def test_clients_lacking_a_concept_do_not_vote_on_its_pairs() -> None:
    # Prepare: heavy clients see a-c and b-c without edges, but never a and b together.
    clients = [_edge("ab"), _matrix("ac", {}), _matrix("bc", {})]

    # Execute
    graph = fuse_graphs("abc", clients, [1, 5, 5])

    # Assert
    assert graph.edges == [("a", "b")]
    assert _score(graph, graph.scores, "a", "b") == pytest.approx(1 / 11)
    assert _score(graph, graph.none_scores, "a", "b") == 0.0


def test_sample_size_weights_can_overturn_the_majority() -> None:
    # Prepare
    clients = [_edge("ab"), _edge("ab"), _edge("ba")]

    # Execute
    equal = fuse_graphs("ab", clients, [10, 10, 10])
    sized = fuse_graphs("ab", clients, [10, 10, 30])

    # Assert
    assert equal.edges == [("a", "b")]
    assert sized.edges == [("b", "a")]


def test_pairs_no_client_holds_get_no_edge_and_zero_scores() -> None:
    graph = fuse_graphs("abcd", [_edge("ab"), _edge("cd")], [1, 1])

    assert graph.edges == [("a", "b"), ("c", "d")]
    assert graph.scores[0, 2] == graph.none_scores[0, 2] == graph.margins[0, 2] == 0.0


def test_scores_match_the_per_pair_definition_on_random_clients() -> None:
    # Prepare
    rng = np.random.default_rng(7)
    names = tuple("abcdefg")
    clients = [_random_client(rng, names) for _ in range(6)]
    weights = rng.uniform(1, 10, size=len(clients))
    alpha = weights / weights.sum()

    # Execute
    graph = fuse_graphs(names, clients, weights)

    # Assert: the definition, pair by pair
    for i, j in itertools.permutations(range(len(names)), 2):
        a, b = names[i], names[j]
        holders = [(k, m.names.index(a), m.names.index(b)) for k, m in enumerate(clients) if {a, b} <= set(m.names)]
        score = sum(alpha[k] * clients[k].values[p, q] for k, p, q in holders)
        none = sum(alpha[k] * (1 - clients[k].values[p, q] - clients[k].values[q, p]) for k, p, q in holders)
        assert graph.scores[i, j] == pytest.approx(score, abs=1e-12)
        assert graph.none_scores[i, j] == pytest.approx(none, abs=1e-12)


# ---------------------------------------------------------------- ties


def test_edge_tied_with_no_edge_gives_no_edge() -> None:
    # Prepare: one client for a -> b, one for no edge; and one client split 0.5 / 0.5.
    split = _matrix("ab", {"ab": 0.5})

    # Execute
    voted = fuse_graphs("ab", [_edge("ab"), _matrix("ab", {})], [1, 1])
    alone = fuse_graphs("ab", [split], [1])

    # Assert
    assert voted.edges == alone.edges == []


def test_opposite_directions_tied_above_no_edge_give_no_edge() -> None:
    graph = fuse_graphs("ab", [_edge("ab"), _edge("ba")], [2, 2])
    reordered = fuse_graphs("ba", [_edge("ba"), _edge("ab")], [2, 2])

    assert graph.edges == reordered.edges == []
    assert graph.none_scores[0, 1] == 0.0


def test_ties_up_to_rounding_count_as_ties() -> None:
    # Prepare: a->b, b->a and none all average 0.2 exactly, but the float sums differ.
    clients = [
        _matrix("ab", {"ab": 0.1, "ba": 0.3}),
        _matrix("ab", {"ab": 0.2, "ba": 0.0}),
        _matrix("ab", {"ab": 0.3, "ba": 0.3}),
    ]

    # Execute
    graph = fuse_graphs("ab", clients, [1, 1, 1])

    # Assert
    assert graph.scores[0, 1] != graph.scores[1, 0]  # the rounding is really there
    assert graph.edges == []


def test_fusion_and_pruning_do_not_depend_on_client_or_name_order() -> None:
    # Prepare: beliefs on a coarse grid, so that many pairs tie.
    rng = np.random.default_rng(3)
    names = tuple("abcdefgh")
    clients = [_random_client(rng, names, grid=True) for _ in range(8)]
    weights = rng.integers(1, 4, size=len(clients)).tolist()
    order = rng.permutation(len(clients))
    shuffled = [_permuted(clients[k], rng) for k in order]
    shuffled_names = tuple(rng.permutation(names).tolist())

    # Execute
    dag, removed = aggregate_graph(names, clients, weights, task="h")
    dag2, removed2 = aggregate_graph(shuffled_names, shuffled, [weights[k] for k in order], task="h")

    # Assert
    assert set(dag.edges) == set(dag2.edges)
    assert sorted(removed) == [(src, dst, pytest.approx(margin)) for src, dst, margin in sorted(removed2)]
    for a, b in itertools.permutations(names, 2):
        assert _score(dag, dag.scores, a, b) == pytest.approx(_score(dag2, dag2.scores, a, b), abs=1e-12)


# ---------------------------------------------------------------- cycle pruning


def test_pruning_removes_the_weakest_margin_edge_of_a_three_cycle() -> None:
    # Prepare: margins a->b 3/6, b->c 2/6, c->a 1/6.
    graph = fuse_graphs("abc", [_edge("ab"), _edge("bc"), _edge("ca")], [3, 2, 1])

    # Execute
    dag, removed = prune_cycles(graph)

    # Assert
    assert dag.edges == [("a", "b"), ("b", "c")]
    assert removed == [RemovedEdge("c", "a", pytest.approx(1 / 6))]
    assert graph.edges == [("a", "b"), ("b", "c"), ("c", "a")]  # input untouched


def test_pruning_breaks_margin_ties_by_edge_names() -> None:
    graph = fuse_graphs("cba", [_edge("ab"), _edge("bc"), _edge("ca")], [1, 1, 1])

    _, removed = prune_cycles(graph)

    assert [(r.src, r.dst) for r in removed] == [("a", "b")]


def test_pruning_a_weak_shared_edge_breaks_two_overlapping_cycles_at_once() -> None:
    # Prepare: cycles a->b->c->a and b->c->d->b share the weakest edge b->c.
    graph = fuse_graphs("abcd", [_edge("ab"), _edge("bc"), _edge("ca"), _edge("cd"), _edge("db")], [5, 1, 5, 5, 5])

    # Execute
    dag, removed = prune_cycles(graph)

    # Assert
    assert [(r.src, r.dst) for r in removed] == [("b", "c")]
    assert nx.is_directed_acyclic_graph(to_networkx(dag))


def test_pruning_two_overlapping_cycles_with_a_strong_shared_edge_removes_one_edge_each() -> None:
    # Prepare: margins (x 1/24) a->b 2, b->c 9, c->a 5, c->d 5, d->b 3.
    graph = fuse_graphs("abcd", [_edge("ab"), _edge("bc"), _edge("ca"), _edge("cd"), _edge("db")], [2, 9, 5, 5, 3])

    # Execute
    dag, removed = prune_cycles(graph)

    # Assert
    assert {(r.src, r.dst) for r in removed} == {("a", "b"), ("d", "b")}
    assert set(dag.edges) == {("b", "c"), ("c", "a"), ("c", "d")}


def test_pruning_never_removes_the_tasks_last_incoming_edge() -> None:
    # Prepare: cycle a->t->b->a where a->t, the task's only parent, is the weakest.
    graph = fuse_graphs("abt", [_edge("at"), _edge("tb"), _edge("ba")], [1, 2, 3])

    # Execute
    _, without_task = prune_cycles(graph)
    dag, with_task = prune_cycles(graph, task="t")

    # Assert
    assert [(r.src, r.dst) for r in without_task] == [("a", "t")]
    assert [(r.src, r.dst) for r in with_task] == [("t", "b")]
    assert ("a", "t") in dag.edges


def test_pruning_may_remove_a_task_parent_when_another_remains() -> None:
    graph = fuse_graphs("abct", [_edge("at"), _edge("tb"), _edge("ba"), _edge("ct")], [1, 2, 3, 5])

    dag, removed = prune_cycles(graph, task="t")

    assert [(r.src, r.dst) for r in removed] == [("a", "t")]
    assert ("c", "t") in dag.edges


def test_parentless_task_gets_its_best_scored_candidate_parent_back() -> None:
    # Prepare: a -> t (0.4 belief) and b -> t (0.3) both lose to "no edge".
    graph = fuse_graphs("abt", [_matrix("at", {"at": 0.4}), _matrix("bt", {"bt": 0.3})], [1, 1])

    # Execute
    dag, removed = prune_cycles(graph, task="t")

    # Assert
    assert graph.edges == []
    assert dag.edges == [("a", "t")]
    assert removed == []


def test_parent_restoration_breaks_score_ties_by_name() -> None:
    graph = fuse_graphs("tba", [_matrix("bt", {"bt": 0.3}), _matrix("at", {"at": 0.3})], [1, 1])

    dag, _ = prune_cycles(graph, task="t")

    assert dag.edges == [("a", "t")]


def test_parent_restoration_skips_candidates_that_would_close_a_cycle() -> None:
    # Prepare: t -> b -> a exists, so the best candidate a -> t would close a cycle.
    clients = [_matrix("at", {"at": 0.4}), _matrix("ct", {"ct": 0.2}), _edge("tb"), _edge("ba")]

    # Execute
    dag, _ = aggregate_graph("abct", clients, [1, 1, 1, 1], task="t")

    # Assert
    assert set(dag.edges) == {("t", "b"), ("b", "a"), ("c", "t")}


def test_task_without_any_positive_candidate_stays_a_root() -> None:
    dag, _ = aggregate_graph("at", [_matrix("at", {})], [1], task="t")

    assert dag.edges == []


# ---------------------------------------------------------------- robustness on real networks


@functools.cache
def _network(name: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Nodes (sorted) and edges of a pgmpy example network.

    Read from the BIF file pgmpy bundles, the one ``pgmpy.utils.get_example_model``
    parses (same nodes and edges); that parser builds its grammar in about 1 s
    per call, which would take most of this file's time budget.
    """
    path = files("pgmpy") / "utils" / "example_models" / f"{name}.bif.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    nodes = re.findall(r"^variable\s+(\S+)\s*\{", text, flags=re.M)
    families = re.findall(r"^probability\s*\(\s*(\S+)\s*(?:\|([^)]*))?\)", text, flags=re.M)
    edges = [(parent.strip(), child) for child, parents in families if parents for parent in parents.split(",")]
    return tuple(sorted(nodes)), tuple(edges)


def _grow(start: set[str], size: int, edges: tuple[tuple[str, str], ...], rng: np.random.Generator) -> list[str]:
    """``start`` grown to ``size`` nodes by random neighbours: connected if ``start`` is."""
    nodes = set(start)
    while len(nodes) < size:
        frontier = sorted(({b for a, b in edges if a in nodes} | {a for a, b in edges if b in nodes}) - nodes)
        if not frontier:
            break
        nodes.add(frontier[rng.integers(len(frontier))])
    return rng.permutation(sorted(nodes)).tolist()


@pytest.mark.parametrize(("network", "task"), [("asia", "dysp"), ("sachs", "Akt")])
@pytest.mark.parametrize("seed", range(3))
def test_fusion_recovers_the_true_graph_when_30_percent_of_clients_reverse_their_edges(
    network: str, task: str, seed: int
) -> None:
    # Prepare: 3 clients report their edges reversed; each of their concept sets is
    # also held (within a larger connected set) by two honest clients, 7 honest in all.
    nodes, edges = _network(network)
    rng = np.random.default_rng(seed)
    reversed_edges = [(b, a) for a, b in edges]
    liars = [_grow({nodes[rng.integers(len(nodes))]}, int(rng.integers(3, 5)), edges, rng) for _ in range(3)]
    honest = [_grow(set(s), len(s) + int(rng.integers(0, 3)), edges, rng) for s in liars + liars]
    honest.append(_grow({nodes[rng.integers(len(nodes))]}, int(rng.integers(3, len(nodes))), edges, rng))
    clients = [ConfidenceMatrix.from_dag(s, reversed_edges) for s in liars]
    clients += [ConfidenceMatrix.from_dag(s, edges) for s in honest]
    clients = [clients[k] for k in rng.permutation(len(clients))]
    seen = set().union(*(m.names for m in clients))
    co_held = {(a, b) for a, b in edges if any({a, b} <= set(m.names) for m in clients)}

    # Execute
    dag, removed = aggregate_graph(nodes, clients, [1.0] * len(clients), task=task)

    # Assert
    assert set(dag.edges) == co_held
    assert co_held <= {(a, b) for a, b in edges if {a, b} <= seen}
    assert len(co_held) >= 2
    assert removed == []


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("names", "values", "expected"),
    [
        ("ab", np.zeros((2, 3)), "must be square (got shape (2, 3))"),
        ("ab", np.zeros((3, 3)), "is 3x3 but has 2 names"),
        ("aa", np.zeros((2, 2)), "duplicate concept name 'a'"),
        ("ab", [[0, np.nan], [0, 0]], "edge 'a' -> 'b' must be finite (got nan)"),
        ("ab", [[0, 0], [np.inf, 0]], "edge 'b' -> 'a' must be finite (got inf)"),
        ("abc", [[0, 0, 0], [0, 0, 1.5], [0, 0, 0]], "edge 'b' -> 'c' must be in [0, 1] (got 1.5)"),
        ("ab", [[0, -0.1], [0, 0]], "edge 'a' -> 'b' must be in [0, 1] (got -0.1)"),
        ("ab", [[0, 0], [0, 0.3]], "edge 'b' -> 'b' must be 0 (no self-loops) (got 0.3)"),
        ("abc", [[0, 0, 0.6], [0, 0, 0], [0.5, 0, 0]], "'a' -> 'c' and 'c' -> 'a' sum to 1.1 > 1"),
        ("ab", [["x", 0], [0, 0]], "values must be numbers"),
        (("a", 2), np.zeros((2, 2)), "concept names must be strings (got 2)"),
    ],
)
def test_invalid_confidence_matrix_raises_one_line_error_naming_the_problem(
    names: tuple[str, ...], values: object, expected: str
) -> None:
    with pytest.raises(FedmosaicError) as error:
        ConfidenceMatrix(tuple(names), values)

    assert expected in str(error.value)
    assert "\n" not in str(error.value)


def test_belief_sums_above_one_by_rounding_only_are_accepted() -> None:
    matrix = ConfidenceMatrix(("a", "b"), [[0, 0.7], [0.3 + 1e-12, 0]])

    assert matrix.values[1, 0] == pytest.approx(0.3)


def test_confidence_matrix_keeps_a_read_only_copy() -> None:
    source = np.array([[0.0, 1.0], [0.0, 0.0]])
    matrix = ConfidenceMatrix(("a", "b"), source)

    source[0, 1] = 0.0

    assert matrix.values[0, 1] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        matrix.values[0, 1] = 0.5


@pytest.mark.parametrize(
    ("names", "clients", "weights", "expected"),
    [
        ("ab", [_edge("ab")], [0], "weights: must be finite and > 0 (got 0 for client 0)"),
        ("ab", [_edge("ab"), _edge("ab")], [1, -2], "(got -2 for client 1)"),
        ("ab", [_edge("ab")], [float("nan")], "(got nan for client 0)"),
        ("ab", [_edge("ab")], [1, 1], "need one per confidence matrix (1)"),
        ("ab", [], [], "at least one client"),
        ("ab", [_edge("ac")], [1], "matrices[0]: concepts not in global_names: ['c']"),
        ("aba", [_edge("ab")], [1], "global_names: duplicate concept name 'a'"),
        ("ab", [np.zeros((2, 2))], [1], "matrices[0]: must be a ConfidenceMatrix (got ndarray)"),
    ],
)
def test_invalid_fusion_input_raises_one_line_error(names: str, clients: list, weights: list, expected: str) -> None:
    with pytest.raises(FedmosaicError, match=None) as error:
        fuse_graphs(names, clients, weights)

    assert expected in str(error.value)
    assert "\n" not in str(error.value)


def test_unknown_task_is_rejected() -> None:
    with pytest.raises(FedmosaicError, match="task: 'z' is not one of the graph's concepts"):
        aggregate_graph("ab", [_edge("ab")], [1], task="z")


# ---------------------------------------------------------------- helpers and exports


def test_from_dag_keeps_only_edges_inside_the_names_in_their_order() -> None:
    matrix = ConfidenceMatrix.from_dag(["c", "a"], [("a", "c"), ("a", "b"), ("b", "c")])

    assert matrix.names == ("c", "a")
    assert matrix.values.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_networkx_export_and_topological_order_follow_the_dag() -> None:
    # Prepare: d -> b -> a, and c alone.
    graph = fuse_graphs("abcd", [ConfidenceMatrix.from_dag("abcd", [("d", "b"), ("b", "a")])], [1])

    # Execute
    digraph = to_networkx(graph)
    order = topological_order(graph)

    # Assert
    assert list(digraph.nodes) == ["a", "b", "c", "d"]
    assert digraph.edges["d", "b"] == {"score": 1.0, "margin": 1.0}
    assert order == ["c", "d", "b", "a"]


def test_topological_order_of_a_cyclic_graph_raises() -> None:
    graph = fuse_graphs("abc", [_edge("ab"), _edge("bc"), _edge("ca")], [1, 1, 1])

    with pytest.raises(FedmosaicError, match="graph has a cycle"):
        topological_order(graph)


# ---------------------------------------------------------------- random clients


def _random_client(rng: np.random.Generator, names: tuple[str, ...], grid: bool = False) -> ConfidenceMatrix:
    """A client on a random subset of ``names`` with random beliefs per pair."""
    held = rng.permutation(names)[: rng.integers(3, len(names) + 1)].tolist()
    values = np.zeros((len(held), len(held)))
    for i, j in itertools.combinations(range(len(held)), 2):
        forward, backward, _ = rng.multinomial(4, [1 / 3] * 3) / 4 if grid else rng.dirichlet([1, 1, 1])
        values[i, j], values[j, i] = forward, backward
    return ConfidenceMatrix(tuple(held), values)


def _permuted(matrix: ConfidenceMatrix, rng: np.random.Generator) -> ConfidenceMatrix:
    """The same beliefs with the client's concepts listed in another order."""
    order = rng.permutation(len(matrix.names))
    return ConfidenceMatrix(tuple(matrix.names[k] for k in order), matrix.values[np.ix_(order, order)])
