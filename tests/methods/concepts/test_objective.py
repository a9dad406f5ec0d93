"""Specification of the F-CMs local objective: masked concept losses, task loss, interventions."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor
from torch.nn import functional as F

from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, ConceptModelParams, build_concept_model
from fedmosaic.methods.concepts.objective import Objective

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
NODES = ("a", "b", "c", "y")
GRAPH = ConceptGraph(NODES, "y", {"a": 2, "b": 3, "c": 2, "y": 2}, {"b": ("a",), "y": ("b", "c")})
INPUT_DIM = 5


class Recorder:
    """Wraps a concept model and records each loss call's ``intervene`` mask and the model's logits for it."""

    def __init__(self, model: ConceptModel) -> None:
        self.model = model
        self.calls: list[tuple[Tensor | None, dict[str, Tensor]]] = []

    def cross_entropies(
        self, x: Tensor, true_values: Tensor, *, intervene: Tensor | None = None
    ) -> tuple[tuple[str, ...], Tensor, Tensor]:
        with torch.no_grad():
            logits = self.model(x, true_values=true_values, intervene=intervene)
        self.calls.append((intervene, logits))
        return self.model.cross_entropies(x, true_values, intervene=intervene)


def _model(family: str) -> ConceptModel:
    params = ConceptModelParams(family=family, encoder_hidden=8, embedding_size=3, decoder_hidden=6)  # type: ignore[arg-type]
    return build_concept_model(INPUT_DIM, GRAPH, params, seed=3)


def _batch(n: int, labeled: tuple[str, ...]) -> tuple[Tensor, Tensor]:
    """Inputs and values with columns in NODES order; unlabeled columns are -1, as ``aligned`` makes them."""
    generator = torch.Generator().manual_seed(11)
    x = torch.randn(n, INPUT_DIM, generator=generator)
    columns = [torch.randint(0, GRAPH.cardinalities[node], (n,), generator=generator) for node in NODES]
    values = torch.stack(columns, dim=1)
    for k, node in enumerate(NODES):
        if node not in labeled:
            values[:, k] = -1
    return x, values


def _hand_loss(logits: dict[str, Tensor], values: Tensor, labeled: tuple[str, ...], gamma: float) -> float:
    with torch.no_grad():
        concepts = sum(F.cross_entropy(logits[n], values[:, NODES.index(n)]).item() for n in labeled if n != "y")
        task = F.cross_entropy(logits["y"], values[:, NODES.index("y")]).item() if "y" in labeled else 0.0
    return gamma * concepts + (1 - gamma) * task


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.8, 1.0])
@pytest.mark.parametrize("labeled", [("a", "b", "y"), ("b", "c"), ("y",)], ids=["with-task", "no-task", "task-only"])
def test_loss_is_gamma_times_labeled_concept_ces_plus_one_minus_gamma_times_task_ce(
    family: str, gamma: float, labeled: tuple[str, ...]
) -> None:
    # Prepare
    model = Recorder(_model(family))
    x, values = _batch(32, labeled)
    objective = Objective(GRAPH, labeled, gamma=gamma, intervention_prob=0.8)

    # Execute: without a generator there are no interventions.
    loss = objective.loss(model, x, values)

    # Assert: checked against F.cross_entropy on the logits the model returned.
    ((intervene, logits),) = model.calls
    assert intervene is None
    expected = _hand_loss(logits, values, labeled, gamma)
    assert loss.item() == pytest.approx(float(expected), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize(
    "labeled", [("a", "b", "c", "y"), ("b", "c"), ("y",)], ids=["with-task", "no-task", "task-only"]
)
def test_with_concept_mean_the_concepts_share_gamma_and_the_task_keeps_one_minus_gamma(
    labeled: tuple[str, ...],
) -> None:
    # Prepare
    model = Recorder(_model("cbm"))
    x, values = _batch(32, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.8, concept_mean=True)
    concepts = sum(node != "y" for node in labeled)

    # Execute
    loss = objective.loss(model, x, values)

    # Assert: the sum's concept part divided by the number of labeled concepts
    ((_, logits),) = model.calls
    task_part = _hand_loss(logits, values, labeled, 0.0) * 0.2
    concept_part = _hand_loss(logits, values, labeled, 1.0) * 0.8 / max(concepts, 1)
    assert loss.item() == pytest.approx(task_part + concept_part, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("family", ["cbm", "cgm"])
def test_loss_with_training_interventions_is_the_same_formula_on_the_intervened_logits(family: str) -> None:
    # Prepare
    labeled = ("a", "b", "y")
    model = Recorder(_model(family))
    x, values = _batch(64, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.5)

    # Execute
    loss = objective.loss(model, x, values, torch.Generator().manual_seed(0))

    # Assert
    ((intervene, logits),) = model.calls
    assert intervene is not None
    assert intervene.any()
    assert loss.item() == pytest.approx(float(_hand_loss(logits, values, labeled, 0.8)), rel=1e-6)


def test_unlabeled_concepts_contribute_nothing_to_the_loss() -> None:
    # Prepare: c is not labeled, so its column holds -1 (a cross-entropy on it would fail).
    labeled = ("a", "b", "y")
    model = _model("cbm")
    x, values = _batch(16, labeled)
    with_c = values.clone()
    with_c[:, NODES.index("c")] = 1
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.0)

    # Execute
    loss_unknown_c = objective.loss(model, x, values)
    loss_known_c = objective.loss(model, x, with_c)

    # Assert: the value of an unlabeled column does not matter.
    assert torch.equal(loss_unknown_c, loss_known_c)


@pytest.mark.parametrize("labeled", [("a", "b", "y"), ("b", "c"), ("c", "y")])
def test_interventions_are_drawn_only_on_labeled_concept_columns(labeled: tuple[str, ...]) -> None:
    # Prepare
    model = Recorder(_model("cgm"))
    x, values = _batch(2000, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.8)

    # Execute
    objective.loss(model, x, values, torch.Generator().manual_seed(1))

    # Assert: never on the task, never on an unlabeled concept; some on every labeled concept.
    ((intervene, _),) = model.calls
    assert intervene is not None
    assert intervene.shape == values.shape
    assert intervene.dtype == torch.bool
    for k, node in enumerate(NODES):
        if node == "y" or node not in labeled:
            assert not intervene[:, k].any(), node
        else:
            assert intervene[:, k].any(), node


@pytest.mark.parametrize("prob", [0.0, 0.2, 0.8, 1.0])
def test_intervention_rate_matches_intervention_prob(prob: float) -> None:
    # Prepare
    labeled = ("a", "b", "c", "y")
    model = Recorder(_model("cbm"))
    x, values = _batch(5000, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=prob)

    # Execute
    objective.loss(model, x, values, torch.Generator().manual_seed(2))

    # Assert: the share per labeled concept is prob (5000 draws: std <= 0.007).
    ((intervene, _),) = model.calls
    for node in ("a", "b", "c"):
        rate = float(intervene[:, NODES.index(node)].float().mean())
        assert rate == pytest.approx(prob, abs=0.03), node


def test_interventions_are_independent_across_samples_and_concepts() -> None:
    # Prepare
    labeled = ("a", "b", "c")
    model = Recorder(_model("cbm"))
    x, values = _batch(5000, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.5)

    # Execute
    objective.loss(model, x, values, torch.Generator().manual_seed(3))

    # Assert: two concepts are intervened together about p * p of the time, not p.
    ((intervene, _),) = model.calls
    both = float((intervene[:, 0] & intervene[:, 1]).float().mean())
    assert both == pytest.approx(0.25, abs=0.03)


def test_interventions_are_determined_by_the_generator() -> None:
    # Prepare
    labeled = ("a", "b", "y")
    model = Recorder(_model("cbm"))
    x, values = _batch(200, labeled)
    objective = Objective(GRAPH, labeled, gamma=0.8, intervention_prob=0.5)

    # Execute
    first = objective.loss(model, x, values, torch.Generator().manual_seed(4))
    again = objective.loss(model, x, values, torch.Generator().manual_seed(4))
    other = objective.loss(model, x, values, torch.Generator().manual_seed(5))

    # Assert
    masks = [intervene for intervene, _ in model.calls]
    assert torch.equal(masks[0], masks[1])
    assert torch.equal(first, again)
    assert not torch.equal(masks[0], masks[2])
    assert not torch.equal(first, other)


def test_loss_of_a_client_labeling_no_node_is_zero() -> None:
    # Prepare
    model = _model("cbm")
    x, values = _batch(8, ())
    objective = Objective(GRAPH, (), gamma=0.8, intervention_prob=0.8)

    # Execute
    loss = objective.loss(model, x, values, torch.Generator().manual_seed(0))

    # Assert
    assert loss.item() == 0.0
