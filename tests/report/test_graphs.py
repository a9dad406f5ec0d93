"""Specification of :mod:`fedmosaic.report.graphs`."""

from fedmosaic.report.graphs import compare_edges, edges_of, layered_layout


def test_each_learned_edge_is_correct_reversed_or_extra_and_true_edges_it_lacks_are_missing() -> None:
    # Prepare
    learned = {"a": [], "b": ["a"], "c": ["b"], "d": ["a"]}
    truth = [("a", "b"), ("c", "b"), ("b", "d"), ("x", "a")]

    # Execute
    marks = compare_edges(learned, truth)

    # Assert: ("x", "a") involves a node the learned graph lacks, so it is not missing
    assert marks == {("a", "b"): "correct", ("b", "c"): "reversed", ("a", "d"): "extra", ("b", "d"): "missing"}


def test_without_a_truth_every_edge_is_unknown() -> None:
    assert compare_edges({"a": [], "b": ["a"]}, None) == {("a", "b"): "unknown"}


def test_layers_follow_the_longest_path_from_a_root() -> None:
    # Prepare: c is a child of a and of b, b a child of a
    parents = {"a": [], "b": ["a"], "c": ["a", "b"], "d": []}

    # Execute
    layout = layered_layout(parents)

    # Assert
    assert {node: layer for node, (_, layer) in layout.items()} == {"a": 0, "d": 0, "b": 1, "c": 2}
    assert layout["a"][0] == 0.25
    assert layout["d"][0] == 0.75
    assert edges_of(parents) == [("a", "b"), ("a", "c"), ("b", "c")]
