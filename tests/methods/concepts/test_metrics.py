"""Specification of the F-CMs metrics: accuracies, concept coverage, intervention curves."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedmosaic.methods.concepts.metrics import (
    concept_scores,
    coverage,
    intervention_curve,
    random_order,
    task_accuracy,
)
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, ConceptModelParams, build_concept_model
from fedmosaic.methods.concepts.task import LabeledConcepts

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
NODES = ("a", "b", "c", "y")
CARDS = {"a": 2, "b": 3, "c": 2, "y": 2}
GRAPH = ConceptGraph(NODES, "y", CARDS, {"b": ("a",), "y": ("b", "c")})
CONCEPT_WIDTH = 7  # one-hot of a, b, c


def _test_set(n: int = 400, noise: float = 0.0) -> LabeledConcepts:
    """X = one-hot of (a, b, c) (+ noise); y = (b >= 1) xor c."""
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
    one_hot = [
        torch.nn.functional.one_hot(torch.from_numpy(test.values[:, k]), CARDS[n]).float() for k, n in enumerate("abc")
    ]
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


def _hits(model: ConceptModel, test: LabeledConcepts) -> dict[str, np.ndarray]:
    """Per-sample argmax hits of every node of the model, computed by hand."""
    with torch.no_grad():
        logits = model.eval()(torch.from_numpy(test.x))
    return {n: logits[n].argmax(1).numpy() == test.values[:, NODES.index(n)] for n in model.graph.nodes}


@pytest.mark.parametrize("family", FAMILIES)
def test_scores_are_argmax_hits_on_the_task_and_the_mean_over_concepts(family: str) -> None:
    # Prepare
    model = _model(family)
    test = _test_set(noise=0.5)

    # Execute
    scores = concept_scores(model, test, common=("a", "b", "c"))

    # Assert
    hits = {n: float(h.mean()) for n, h in _hits(model, test).items()}
    assert scores["task_accuracy"] == pytest.approx(hits["y"])
    assert task_accuracy(model, test) == pytest.approx(hits["y"])
    assert scores["concept_accuracy"] == pytest.approx(np.mean([hits["a"], hits["b"], hits["c"]]))
    assert scores["own_concept_accuracy"] == pytest.approx(scores["concept_accuracy"])
    assert {n: v["accuracy"] for n, v in scores["per_concept"].items()} == pytest.approx({n: hits[n] for n in "abc"})


def test_concept_accuracy_of_a_task_only_model_is_zero() -> None:
    # Prepare
    graph = ConceptGraph(("y",), "y", {"y": 2}, {})
    model = build_concept_model(CONCEPT_WIDTH, graph, ConceptModelParams(family="cgm", encoder_hidden=4), seed=0)
    test = _test_set()

    # Execute
    scores = concept_scores(model, test, common=())

    # Assert
    assert scores["concept_accuracy"] == scores["own_concept_accuracy"] == 0.0
    assert 0.0 <= scores["task_accuracy"] <= 1.0


def test_concept_accuracy_is_over_the_common_set_a_concept_not_predicted_counting_as_wrong() -> None:
    # Prepare: a model without c, and one extra concept (a) outside the common set {b, c}.
    graph = ConceptGraph(("a", "b", "y"), "y", {"a": 2, "b": 3, "y": 2}, {"b": ("a",), "y": ("b",)})
    model = build_concept_model(CONCEPT_WIDTH, graph, ConceptModelParams(encoder_hidden=4), seed=0)
    test = _test_set()

    # Execute
    scores = concept_scores(model, test, common=("b", "c"))

    # Assert: the common set scores b and a zero for c; the own set scores a and b.
    hits = {n: float(h.mean()) for n, h in _hits(model, test).items()}
    assert scores["concept_accuracy"] == pytest.approx((hits["b"] + 0.0) / 2)
    assert scores["own_concept_accuracy"] == pytest.approx((hits["a"] + hits["b"]) / 2)
    assert scores["per_concept"]["c"] == {"accuracy": 0.0, "balanced_accuracy": 0.0}
    assert set(scores["per_concept"]) == {"a", "b", "c"}


def test_balanced_concept_accuracy_is_the_mean_recall_over_values() -> None:
    # Prepare: a CBM whose concepts are perfect except c, forced to always say 0.
    model = _model("cbm", seed=3)
    _make_concepts_perfect(model)
    block = model.get_submodule(model.node_prefix("c").rstrip("."))
    with torch.no_grad():
        block.scorer.weight.zero_()
        block.scorer.bias.copy_(torch.tensor([1.0, 0.0]))
    test = _test_set(noise=0.0)

    # Execute
    scores = concept_scores(model, test, common=("a", "b", "c"))

    # Assert: c scores its majority share plainly and 1/2 balanced.
    share_of_zero = float(np.mean(test.values[:, 2] == 0))
    assert scores["per_concept"]["c"] == pytest.approx({"accuracy": share_of_zero, "balanced_accuracy": 0.5})
    assert scores["balanced_concept_accuracy"] == pytest.approx((1.0 + 1.0 + 0.5) / 3)
    assert scores["concept_accuracy"] == pytest.approx((2.0 + share_of_zero) / 3)


# --------------------------------------------------------------------------- intervention curves


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("order", [("a", "b", "c"), ("c", "a"), ()], ids=["all", "some", "none"])
def test_intervention_curve_has_one_point_per_prefix_of_the_order(family: str, order: tuple[str, ...]) -> None:
    """Each point, computed by recomputing only what the added concept changes, equals a whole forward pass."""
    # Prepare
    model = _model(family)
    test = _test_set(noise=0.5)

    # Execute
    curve = intervention_curve(model, test, order)

    # Assert: len(order) + 1 points; point k intervenes the first k concepts.
    assert len(curve) == len(order) + 1
    assert curve[0] == task_accuracy(model, test)
    for k in range(len(order) + 1):
        assert curve[k] == task_accuracy(model, test, order[:k])


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
    assert concept_scores(model, test, ("a", "b", "c"))["concept_accuracy"] == 1.0

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
    with pytest.raises(ValueError, match=r"intervention order: \[.z.\] are not nodes of the model"):
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
