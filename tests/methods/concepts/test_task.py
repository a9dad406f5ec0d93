"""Specification of the F-CMs task data structures: labeled samples and graphs in messages."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedmosaic.methods.concepts.models import ConceptGraph
from fedmosaic.methods.concepts.task import LabeledConcepts, decode_graph, encode_graph


def _samples() -> LabeledConcepts:
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    values = np.array([[0, 2], [1, 0], [1, 1]], dtype=np.int64)
    return LabeledConcepts(x=x, values=values, names=("a", "b"))


# --------------------------------------------------------------------------- LabeledConcepts


def test_aligned_puts_minus_one_for_nodes_the_samples_do_not_hold() -> None:
    # Prepare
    samples = _samples()

    # Execute
    aligned = samples.aligned(("c", "a", "y", "b"))

    # Assert: columns follow the requested order; missing nodes are -1 in every row.
    assert aligned.dtype == np.int64
    assert aligned.tolist() == [[-1, 0, -1, 2], [-1, 1, -1, 0], [-1, 1, -1, 1]]


def test_aligned_drops_held_columns_that_are_not_requested() -> None:
    # Prepare
    samples = _samples()

    # Execute
    aligned = samples.aligned(("b",))

    # Assert
    assert aligned.tolist() == [[2], [0], [1]]


def test_aligned_returns_a_copy_that_leaves_the_samples_untouched() -> None:
    # Prepare
    samples = _samples()

    # Execute
    aligned = samples.aligned(("a", "b"))
    aligned[:] = 7

    # Assert
    assert samples.values.tolist() == [[0, 2], [1, 0], [1, 1]]


def test_labeled_concepts_reject_values_that_do_not_match_inputs_and_names() -> None:
    # Prepare
    x = np.zeros((3, 2), dtype=np.float32)

    # Execute / Assert: one column too few, then one row too many.
    with pytest.raises(ValueError, match="shape"):
        LabeledConcepts(x=x, values=np.zeros((3, 1), dtype=np.int64), names=("a", "b"))
    with pytest.raises(ValueError, match="shape"):
        LabeledConcepts(x=x, values=np.zeros((4, 2), dtype=np.int64), names=("a", "b"))


def test_len_is_the_number_of_samples() -> None:
    assert len(_samples()) == 3


def test_task_input_dim_is_the_width_of_the_test_inputs(make_task) -> None:
    # Prepare / Execute
    task = make_task()

    # Assert
    assert task.input_dim == task.test.x.shape[1] == 7


# --------------------------------------------------------------------------- graphs in messages

GRAPHS = {
    "chain": ConceptGraph(("a", "b", "c", "y"), "y", {"a": 2, "b": 3, "c": 2, "y": 2}, {"b": ("a",), "y": ("b", "c")}),
    "no-edges": ConceptGraph(("y", "a"), "y", {"a": 4, "y": 2}, {}),
    "odd-names": ConceptGraph(("x.1", "ß %", "y"), "y", {"x.1": 2, "ß %": 5, "y": 3}, {"y": ("ß %", "x.1")}),
}


@pytest.mark.parametrize("graph", GRAPHS.values(), ids=GRAPHS.keys())
def test_decode_graph_inverts_encode_graph(graph: ConceptGraph) -> None:
    # Execute
    decoded = decode_graph(encode_graph(graph))

    # Assert: nodes (and their order), task, cardinalities and parents survive.
    assert decoded == graph
    assert decoded.nodes == graph.nodes
    assert decoded.topological_order() == graph.topological_order()


@pytest.mark.parametrize("graph", GRAPHS.values(), ids=GRAPHS.keys())
def test_encode_graph_is_a_fixed_point_through_decode(graph: ConceptGraph) -> None:
    # Prepare
    text = encode_graph(graph)

    # Execute / Assert: the text is a stable fingerprint of the graph.
    assert encode_graph(decode_graph(text)) == text


def test_encode_graph_is_compact_json_fit_for_message_config() -> None:
    # Execute
    text = encode_graph(GRAPHS["chain"])

    # Assert: a plain JSON string (a config value), no whitespace padding.
    spec = json.loads(text)
    assert set(spec) == {"nodes", "task", "cardinalities", "parents"}
    assert " " not in text
    assert "\n" not in text
