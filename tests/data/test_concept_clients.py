"""Specification of the F-CMs client layout: concept subsets, clients, local graphs."""

import itertools
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np
import pytest

from fedmosaic.data.bayesnet import NETWORK_TASKS, load_network
from fedmosaic.data.concept_clients import (
    ConceptSubsets,
    ancestral_graph,
    assign_clients,
    concept_subsets,
    corrupted_clients,
    cover_every_node,
    learned_confidence,
    oracle_confidence,
)
from fedmosaic.errors import ConfigError

Edges = tuple[tuple[str, str], ...]
SEEDS = range(15)


@pytest.fixture(scope="module", params=["asia", "sachs"])
def network(request: pytest.FixtureRequest) -> tuple[Edges, str]:
    """The edges and task of a benchmark network."""
    return tuple(load_network(request.param).edges()), NETWORK_TASKS[request.param]


@pytest.fixture(scope="module")
def asia_edges() -> Edges:
    return tuple(load_network("asia").edges())


def draw_layouts(edges: Edges, task: str, **options: Any) -> list[ConceptSubsets]:
    return [concept_subsets(edges, task, np.random.default_rng(seed), **options) for seed in SEEDS]


def test_ancestral_graph_keeps_the_task_its_ancestors_and_their_edges(asia_edges: Edges) -> None:
    # Execute
    nodes, edges = ancestral_graph(asia_edges, "dysp")

    # Assert
    assert set(nodes) == {"asia", "tub", "smoke", "lung", "bronc", "either", "dysp"}
    assert nodes[-1] == "dysp"
    assert set(edges) == set(asia_edges) - {("either", "xray")}


def test_subsets_cover_every_ancestral_node_and_edge(network: tuple[Edges, str]) -> None:
    # Prepare
    edges, task = network
    nodes, ancestral_edges = ancestral_graph(edges, task)

    # Execute
    layouts = draw_layouts(edges, task)

    # Assert
    for layout in layouts:
        assert set().union(*layout.subsets) == set(nodes)
        for parent, child in ancestral_edges:
            assert any({parent, child} <= set(subset) for subset in layout.subsets)


def test_every_subset_is_connected_and_reaches_the_task(network: tuple[Edges, str]) -> None:
    # Prepare
    edges, task = network
    graph = nx.DiGraph(ancestral_graph(edges, task)[1])
    task_parents = set(graph.predecessors(task))

    # Execute
    layouts = draw_layouts(edges, task)

    # Assert
    for subset in itertools.chain.from_iterable(layout.subsets for layout in layouts):
        assert len(subset) >= 2
        assert nx.is_weakly_connected(graph.subgraph(subset))
        assert task_parents & set(subset)  # each subset ends in a path into the task


def test_subset_counts_follow_the_range_and_the_additional_subset_count(
    network: tuple[Edges, str],
) -> None:
    # Prepare
    edges, task = network

    # Execute
    layouts = draw_layouts(edges, task, num_subgraphs_range=(2, 4), additional_subsets=3)

    # Assert
    for layout in layouts:
        assert 2 <= layout.additional.count(False) <= 4
        assert layout.additional.count(True) == 3
        assert list(layout.additional) == sorted(layout.additional)  # base subsets first


def test_additional_nodes_appear_only_in_additional_subsets(network: tuple[Edges, str]) -> None:
    # Prepare
    edges, task = network

    # Execute
    layouts = draw_layouts(edges, task)

    # Assert
    for layout in layouts:
        assert len(layout.additional_nodes) == 2
        assert task not in layout.additional_nodes
        for subset, additional in zip(layout.subsets, layout.additional, strict=True):
            held = set(layout.additional_nodes) & set(subset)
            assert held == (set(layout.additional_nodes) if additional else set())


def test_task_is_dropped_only_from_some_subsets_and_never_loses_an_edge(
    network: tuple[Edges, str],
) -> None:
    # Prepare
    edges, task = network

    # Execute
    kept = draw_layouts(edges, task, drop_task_probability=0.0)
    dropped = draw_layouts(edges, task, drop_task_probability=1.0)

    # Assert
    assert all(task in subset for layout in kept for subset in layout.subsets)
    assert any(task not in subset for layout in dropped for subset in layout.subsets)
    for layout in dropped:
        assert any(task in subset for subset in layout.subsets)


def test_same_generator_seed_gives_the_same_subsets(asia_edges: Edges) -> None:
    # Execute
    first = concept_subsets(asia_edges, "dysp", np.random.default_rng(7))
    again = concept_subsets(asia_edges, "dysp", np.random.default_rng(7))

    # Assert
    assert first == again


def test_clients_get_contiguous_chunks_and_join_rounds(asia_edges: Edges) -> None:
    # Prepare
    layout = concept_subsets(asia_edges, "dysp", np.random.default_rng(0))

    # Execute
    clients = assign_clients(layout, 1400, 200, np.random.default_rng(0))

    # Assert
    assert [client.client_id for client in clients] == list(range(20))
    assert [client.joins_at for client in clients] == [1] * 10 + [10] * 10
    np.testing.assert_array_equal(np.concatenate([c.train_rows for c in clients]), np.arange(1400))
    np.testing.assert_array_equal(np.concatenate([c.val_rows for c in clients]), np.arange(200))
    assert {len(client.train_rows) for client in clients} == {70}
    assert all(client.has_task == ("dysp" in client.concepts) for client in clients)


def test_additional_subsets_go_only_to_late_clients_and_every_subset_is_used(
    network: tuple[Edges, str],
) -> None:
    # Prepare
    edges, task = network
    layouts = draw_layouts(edges, task, additional_subsets=3)

    for seed, layout in enumerate(layouts):
        # Execute
        clients = assign_clients(layout, 700, 100, np.random.default_rng(seed))

        # Assert
        extra = set(layout.additional_nodes)
        assert not any(extra & set(client.concepts) for client in clients[:10])
        assert sum(bool(extra & set(client.concepts)) for client in clients[10:]) == 5
        assert {client.concepts for client in clients} == set(layout.subsets)


def test_too_few_clients_for_the_subsets_is_a_config_error(asia_edges: Edges) -> None:
    # Prepare
    layout = concept_subsets(asia_edges, "dysp", np.random.default_rng(0), additional_subsets=3)

    # Execute
    with pytest.raises(ConfigError) as caught:
        assign_clients(layout, 700, 100, np.random.default_rng(0), num_clients=12, initial=10)

    # Assert
    assert caught.value.field == "concepts.initial_clients"


def test_one_client_in_ten_is_corrupted() -> None:
    # Execute
    picked = corrupted_clients(20, np.random.default_rng(0))

    # Assert
    assert len(picked) == 2
    assert len(set(picked)) == 2
    assert all(0 <= k < 20 for k in picked)


def assert_valid_confidence(matrix: np.ndarray) -> None:
    assert np.all((matrix >= 0) & (matrix <= 1))
    np.testing.assert_array_equal(np.diag(matrix), 0)
    assert np.all(matrix + matrix.T <= 1 + 1e-12)


def test_oracle_matrix_is_the_true_dag_restricted_to_the_concepts(asia_edges: Edges) -> None:
    # Prepare
    concepts = ["dysp", "either", "lung", "smoke", "bronc"]

    # Execute
    names, matrix = oracle_confidence(asia_edges, concepts, np.random.default_rng(0), corrupt=False)

    # Assert
    assert names == tuple(concepts)
    assert_valid_confidence(matrix)
    present = {(names[i], names[j]) for i, j in zip(*np.nonzero(matrix), strict=True)}
    assert present == {
        ("either", "dysp"),
        ("lung", "either"),
        ("smoke", "lung"),
        ("smoke", "bronc"),
        ("bronc", "dysp"),
    }


def test_corrupted_oracle_matrix_differs_in_a_tenth_of_the_pairs(asia_edges: Edges) -> None:
    # Prepare
    concepts = [node for edge in asia_edges for node in edge]
    concepts = sorted(set(concepts))  # 8 concepts, 28 pairs: round(2.8) = 3 perturbed
    _, truth = oracle_confidence(asia_edges, concepts, np.random.default_rng(0), corrupt=False)

    for seed in SEEDS:
        # Execute
        _, corrupted = oracle_confidence(asia_edges, concepts, np.random.default_rng(seed), corrupt=True)

        # Assert
        assert_valid_confidence(corrupted)
        pairs_changed = sum(
            (truth[i, j], truth[j, i]) != (corrupted[i, j], corrupted[j, i])
            for i, j in itertools.combinations(range(len(concepts)), 2)
        )
        assert pairs_changed == 3


def test_learned_confidence_recovers_a_strong_edge_and_no_spurious_one() -> None:
    # Prepare: y copies x 95% of the time; z is independent noise
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, 400)
    y = np.where(rng.random(400) < 0.95, x, 1 - x)
    z = rng.integers(0, 3, 400)
    values = np.stack([x, y, z], axis=1)

    # Execute
    names, matrix = learned_confidence(values, ["x", "y", "z"], np.random.default_rng(1), n_bootstrap=10)

    # Assert
    assert names == ("x", "y", "z")
    assert_valid_confidence(matrix)
    assert matrix[0, 1] + matrix[1, 0] == pytest.approx(1.0)
    assert matrix[0, 2] + matrix[2, 0] + matrix[1, 2] + matrix[2, 1] <= 0.2


def test_learned_confidence_orients_an_identifiable_collider() -> None:
    # Prepare: a -> c <- b with independent a and b, so the directions are identifiable
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 600), rng.integers(0, 2, 600)
    c = np.where(rng.random(600) < 0.9, a + b, rng.integers(0, 3, 600))

    # Execute
    _, matrix = learned_confidence(np.stack([a, b, c], axis=1), ["a", "b", "c"], np.random.default_rng(1))

    # Assert: hill climbing sometimes ends in a complete (unoriented) graph, never in a reversed collider
    assert matrix[0, 2] >= 0.6
    assert matrix[1, 2] >= 0.6
    assert matrix[0, 2] > matrix[2, 0]
    assert matrix[1, 2] > matrix[2, 1]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda edges: concept_subsets(edges, "dysq", np.random.default_rng(0)), "data.task"),
        (lambda edges: concept_subsets(edges, "asia", np.random.default_rng(0)), "data.task"),
        (
            lambda edges: concept_subsets(edges, "dysp", np.random.default_rng(0), num_subgraphs_range=(3, 2)),
            "partition.num_subgraphs_range",
        ),
    ],
    ids=["unknown task", "task without ancestors", "empty range"],
)
def test_bad_layout_requests_are_one_line_config_errors(
    asia_edges: Edges, call: Callable[[Edges], object], field: str
) -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        call(asia_edges)

    # Assert
    assert caught.value.field == field
    assert "\n" not in str(caught.value)


def test_covering_every_node_adds_each_missing_node_to_one_subset_and_keeps_the_rest() -> None:
    # Prepare: alarm's task BP is a leaf; the subsets cover only its ancestors
    model = load_network("alarm")
    layout = concept_subsets(model.edges(), "BP", np.random.default_rng(0), additional_subsets=3)
    nodes = sorted(model.nodes())

    # Execute
    covered = cover_every_node(layout, nodes, np.random.default_rng(1))

    # Assert
    held = [node for subset in covered.subsets for node in subset]
    assert sorted(set(held)) == nodes
    missing = set(nodes) - set().union(*layout.subsets)
    assert missing
    assert all(held.count(node) == 1 for node in missing)
    assert all(new[: len(old)] == old for old, new in zip(layout.subsets, covered.subsets, strict=True))
    assert covered.additional == layout.additional
