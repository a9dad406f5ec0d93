"""Specification of the F-CMs metrics: accuracies, concept coverage, intervention curves."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedmosaic.methods.concepts.metrics import accuracies, coverage, intervention_curve, random_order
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, ConceptModelParams, build_concept_model
from fedmosaic.methods.concepts.task import LabeledConcepts

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
NODES = ("a", "b", "c", "y")
CARDS = {"a": 2, "b": 3, "c": 2, "y": 2}
GRAPH = ConceptGraph(NODES, "y", CARDS, {"b": ("a",), "y": ("b", "c")})
CONCEPT_WIDTH = 7  # one-hot of a, b, c


def _test_set(n: int = 400, noise: float = 0.0) -> LabeledConcepts:
    """x = one-hot of (a, b, c) (+ noise); y = (b >= 1) xor c."""
    rng = np.random.default_rng(5)
    a, b, c = rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)
    y = ((b >= 1) ^ (c == 1)).astype(np.int64)
    x = np.concatenate([np.eye(2)[a], np.eye(3)[b], np.eye(2)[c]], axis=1)
    x = (x + noise * rng.standard_normal(x.shape)).astype(np.float32)
    return LabeledConcepts(x=x, values=np.stack([a, b, c, y], axis=1).astype(np.int64), names=NODES)


def _model(family: str, decoder: str = "mlp", seed: int = 0) -> ConceptModel:
    params = ConceptModelParams(family=family, decoder=decoder, encoder_hidden=16, embedding_size=4, decoder_hidden=8)  # type: ignore[arg-type]
    return build_concept_model(CONCEPT_WIDTH, GRAPH, params, seed=seed)


def _decoder_accuracy_on_true_concepts(model: ConceptModel, test: LabeledConcepts) -> float:
    """Accuracy of a CBM's task decoder fed the one-hot true concepts, computed by hand."""
    one_hot = [torch.nn.functional.one_hot(torch.from_numpy(test.values[:, k]), CARDS[n]).float() for k, n in enumerate("abc")]
    decoder = model.get_submodule(model.node_prefix("y").rstrip("."))
    with torch.no_grad():
        logits = decoder(torch.zeros(len(test), 0), torch.cat(one_hot, dim=1)).logits
    return float((logits.argmax(dim=1).numpy() == test.values[:, 3]).mean())


def _make_concepts_perfect(model: ConceptModel) -> None:
    """Encoder = identity on the one-hot input; each concept's first value embedding unit reads its block with a large gain."""
    hidden = model.params.encoder_hidden
    eye = torch.eye(hidden, CONCEPT_WIDTH)
    with torch.no_grad():
        model.encoder[0].weight.copy_(eye)
        model.encoder[0].bias.zero_()
        model.encoder[2].weight.copy_(torch.eye(hidden))
        model.encoder[2].bias.zero_()
        for node, start in (("a", 0), ("b", 2), ("c", 5)):
            block = model.get_submodule(model.node_prefix(node).rstrip("."))
            values, scorer = block.values[0], block.scorer
            size = block.embedding_size
            for layer in (values, scorer):
                layer.weight.zero_()
                layer.bias.zero_()
            for v in range(CARDS[node]):
                values.weight[v * size, start + v] = 60.0
                scorer.weight[v, v * size] = 1.0


# --------------------------------------------------------------------------- coverage


@pytest.mark.parametrize(
    ("nodes", "task_labeled", "ancestors", "expected"),
    [
        (["a", "y"], True, {"a", "b"}, 2 / 3),
        (["a", "y"], False, {"a", "b"}, 1 / 3),
        (["a", "b", "y"], True, {"a", "b"}, 1.0),
        (["y"], True, {"a", "b", "c"}, 1 / 4),
        (["y"], False, {"a", "b", "c"}, 0.0),
        (["y"], True, set(), 1.0),
        (["a", "d", "e", "y"], True, {"a", "b", "c"}, 2 / 4),
        (["d", "a", "y"], False, {"a"}, 1 / 2),
    ],
    ids=["half", "task-unlabeled", "complete", "task-only", "nothing", "no-ancestors", "extras-ignored", "order-free"],
)
def test_coverage_is_the_share_of_true_ancestors_and_task_the_model_predicts(
    nodes: list[str], task_labeled: bool, ancestors: set[str], expected: float
) -> None:
    # Execute
    value = coverage(nodes, "y", task_labeled, frozenset(ancestors))

    # Assert
    assert value == pytest.approx(expected)


# --------------------------------------------------------------------------- accuracies


@pytest.mark.parametrize("family", FAMILIES)
def test_accuracies_are_argmax_hits_on_the_task_and_the_mean_over_concepts(family: str) -> None:
    # Prepare
    model = _model(family)
    test = _test_set(noise=0.5)

    # Execute
    scores = accuracies(model, test)

    # Assert
    with torch.no_grad():
        logits = model.eval()(torch.from_numpy(test.x))
    hits = {n: float((logits[n].argmax(1).numpy() == test.values[:, k]).mean()) for k, n in enumerate(NODES)}
    assert scores["task_accuracy"] == pytest.approx(hits["y"])
    assert scores["concept_accuracy"] == pytest.approx(np.mean([hits["a"], hits["b"], hits["c"]]))


def test_concept_accuracy_of_a_task_only_model_is_zero() -> None:
    # Prepare
    graph = ConceptGraph(("y",), "y", {"y": 2}, {})
    model = build_concept_model(CONCEPT_WIDTH, graph, ConceptModelParams(family="cgm", encoder_hidden=4), seed=0)
    test = _test_set()

    # Execute
    scores = accuracies(model, test)

    # Assert
    assert scores["concept_accuracy"] == 0.0
    assert 0.0 <= scores["task_accuracy"] <= 1.0


def test_accuracies_evaluate_only_the_nodes_the_model_has() -> None:
    # Prepare: a model without c, tested on samples labeled for every node.
    graph = ConceptGraph(("a", "b", "y"), "y", {"a": 2, "b": 3, "y": 2}, {"b": ("a",), "y": ("b",)})
    model = build_concept_model(CONCEPT_WIDTH, graph, ConceptModelParams(encoder_hidden=4), seed=0)
    test = _test_set()

    # Execute
    scores = accuracies(model, test)

    # Assert
    with torch.no_grad():
        logits = model.eval()(torch.from_numpy(test.x))
    hits = [float((logits[n].argmax(1).numpy() == test.values[:, NODES.index(n)]).mean()) for n in ("a", "b")]
    assert scores["concept_accuracy"] == pytest.approx(np.mean(hits))


# --------------------------------------------------------------------------- intervention curves


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("order", [("a", "b", "c"), ("c", "a"), ()], ids=["all", "some", "none"])
def test_intervention_curve_has_one_point_per_prefix_of_the_order(family: str, order: tuple[str, ...]) -> None:
    # Prepare
    model = _model(family)
    test = _test_set(noise=0.5)

    # Execute
    curve = intervention_curve(model, test, order)

    # Assert: len(order) + 1 points; point k intervenes the first k concepts.
    assert len(curve) == len(order) + 1
    assert curve[0] == accuracies(model, test)["task_accuracy"]
    for k in range(len(order) + 1):
        assert curve[k] == accuracies(model, test, order[:k])["task_accuracy"]


@pytest.mark.parametrize("decoder", ["linear", "mlp"])
def test_full_intervention_of_a_cbm_gives_its_decoder_accuracy_on_true_concepts(decoder: str) -> None:
    # Prepare: concept heads are untrained (poor); full intervention bypasses them.
    model = _model("cbm", decoder)
    test = _test_set(noise=0.5)

    # Execute
    curve = intervention_curve(model, test, ["b", "c", "a"])

    # Assert
    assert curve[-1] == pytest.approx(_decoder_accuracy_on_true_concepts(model, test))


@pytest.mark.parametrize("decoder", ["linear", "mlp"])
def test_intervening_on_a_perfect_concept_model_changes_nothing(decoder: str) -> None:
    # Prepare: concept heads that predict the true values with certainty.
    model = _model("cbm", decoder, seed=3)
    _make_concepts_perfect(model)
    test = _test_set(noise=0.0)
    assert accuracies(model, test)["concept_accuracy"] == 1.0

    # Execute
    curve = intervention_curve(model, test, ["a", "b", "c"])

    # Assert: every point equals the decoder's accuracy on the true concepts.
    expected = _decoder_accuracy_on_true_concepts(model, test)
    assert curve == pytest.approx([expected] * 4)


def test_intervening_on_a_concept_the_model_lacks_is_refused() -> None:
    # Prepare
    model = _model("cbm")
    test = _test_set()

    # Execute / Assert
    with pytest.raises(ValueError):
        intervention_curve(model, test, ["a", "z"])


# --------------------------------------------------------------------------- random order


def test_random_order_is_a_permutation_determined_by_the_generator() -> None:
    # Prepare
    concepts = ["a", "b", "c", "d", "e", "f"]

    # Execute
    first = random_order(concepts, np.random.default_rng(0))
    again = random_order(concepts, np.random.default_rng(0))
    others = {tuple(random_order(concepts, np.random.default_rng(s))) for s in range(1, 6)}

    # Assert
    assert sorted(first) == concepts
    assert first == again
    assert len(others | {tuple(first)}) > 1
