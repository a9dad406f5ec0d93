"""Specification of level-at-a-time evaluation: it computes what the node-by-node evaluation computes."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from fedmosaic.methods.concepts.levels import LevelPlan
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, ConceptModelParams

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
TOLERANCE = 1e-5
"""Float32 rounding of sums taken in another order (measured: below 2e-6)."""

# Cardinalities 2 to 5 and in-degrees 0 to 3, so groups are stacked with inputs of several widths.
SMALL = ConceptGraph(
    ("a", "b", "c", "d", "e", "y"),
    "y",
    {"a": 2, "b": 3, "c": 3, "d": 5, "e": 2, "y": 4},
    {"c": ("a",), "d": ("a", "b"), "e": ("c",), "y": ("c", "d", "e")},
)
# Grown: a new root f read by d and y (rewired), a new leaf g under b.
GROWN = ConceptGraph(
    ("f", "a", "b", "c", "d", "e", "g", "y"),
    "y",
    {**SMALL.cardinalities, "f": 3, "g": 4},
    {"c": ("a",), "d": ("a", "b", "f"), "e": ("c",), "g": ("b",), "y": ("c", "d", "e", "f")},
)


def _model(family: str, init: str = "zero") -> ConceptModel:
    params = ConceptModelParams(family=family, init=init, encoder_hidden=8, embedding_size=3, decoder_hidden=6)  # type: ignore[arg-type]
    model = ConceptModel(5, SMALL, params, seed=1)
    model.adapt(GROWN)
    with torch.no_grad():  # every weight non-zero, the rewired ones included
        for parameter in model.parameters():
            parameter.add_(
                0.2 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(parameter.numel()))
            )
    return model


def _batch(n: int) -> tuple[Tensor, Tensor, Tensor]:
    generator = torch.Generator().manual_seed(7)
    x = torch.randn(n, 5, generator=generator)
    values = torch.stack(
        [torch.randint(0, GROWN.cardinalities[node], (n,), generator=generator) for node in GROWN.nodes], dim=1
    )
    values[::3, GROWN.nodes.index("c")] = -1  # some unknown values
    intervene = torch.rand(values.shape, generator=generator) < 0.4
    return x, values, intervene


def _both(model: ConceptModel, compute):  # type: ignore[no-untyped-def]
    model.per_node = False
    batched = compute()
    model.per_node = True
    node_by_node = compute()
    return batched, node_by_node


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("interventions", [False, True], ids=["plain", "intervened"])
def test_logits_equal_the_node_by_node_evaluation(family: str, interventions: bool) -> None:
    # Prepare
    model = _model(family, init="orthogonal")
    x, values, intervene = _batch(9)
    given = {"true_values": values, "intervene": intervene} if interventions else {}

    # Execute
    batched, node_by_node = _both(model, lambda: model(x, **given))

    # Assert
    assert list(batched) == list(node_by_node) == list(GROWN.nodes)
    for node in GROWN.nodes:
        assert batched[node].shape == (9, GROWN.cardinalities[node])
        torch.testing.assert_close(batched[node], node_by_node[node], atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_cross_entropies_and_their_gradients_equal_the_node_by_node_evaluation(family: str) -> None:
    # Prepare
    model = _model(family)
    x, values, intervene = _batch(12)

    def compute() -> tuple[tuple[str, ...], Tensor, Tensor, dict[str, Tensor]]:
        model.zero_grad()
        nodes, sums, counts = model.cross_entropies(x, values, intervene=intervene)
        weights = torch.tensor([1.0 + GROWN.nodes.index(node) for node in nodes])  # a different weight per node
        (sums * weights).sum().backward()
        gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        return nodes, sums.detach(), counts, gradients

    # Execute
    (nodes, sums, counts, grads), (nodes_1, sums_1, counts_1, grads_1) = _both(model, compute)

    # Assert: the same terms (the order may differ) and a gradient for every parameter.
    order = [nodes_1.index(node) for node in nodes]
    assert sorted(nodes) == sorted(GROWN.nodes)
    torch.testing.assert_close(sums, sums_1[order], atol=TOLERANCE, rtol=0)
    assert torch.equal(counts, counts_1[order])
    assert counts[nodes.index("b")] == 12
    assert counts[nodes.index("c")] == 8
    assert set(grads) == set(grads_1) == {name for name, _ in model.named_parameters()}
    for name in grads:
        torch.testing.assert_close(grads[name], grads_1[name], atol=TOLERANCE, rtol=0, msg=name)


def test_cross_entropies_count_only_rows_that_know_the_value() -> None:
    # Prepare
    model = _model("cgm")
    x, values, _ = _batch(6)
    values[:, GROWN.nodes.index("g")] = -1

    # Execute
    nodes, sums, counts = model.cross_entropies(x, values)

    # Assert
    assert counts[nodes.index("g")] == 0
    assert sums[nodes.index("g")] == 0
    assert counts[nodes.index("c")] == 4


@pytest.mark.parametrize("family", FAMILIES)
def test_the_plan_stacks_each_level_by_module_kind_and_cardinality(family: str) -> None:
    # Prepare
    model = _model(family)

    # Execute
    plan = model._plan(model._order, torch.device("cpu"))

    # Assert: every node once; within a group one kind, one cardinality, no node reading another.
    computed = [node for group in plan.groups for node in group.nodes]
    assert sorted(computed) == sorted(GROWN.nodes)
    for group in plan.groups:
        assert len({GROWN.cardinalities[node] for node in group.nodes}) == 1
        assert len({type(model._block(node)) for node in group.nodes}) == 1
        for node in group.nodes:
            assert not set(model._specs[node].sources) & set(group.nodes)
    assert isinstance(plan, LevelPlan)


def test_intervention_sweep_equals_node_by_node_passes() -> None:
    # Prepare
    model = _model("c2bm")
    x, values, _ = _batch(10)
    order = ["d", "f", "a", "g", "c"]

    # Execute
    sweep = model.intervention_sweep(x, values, order)

    # Assert
    model.per_node = True
    for k in range(len(order) + 1):
        mask = torch.zeros(values.shape, dtype=torch.bool)
        mask[:, [GROWN.nodes.index(node) for node in order[:k]]] = True
        expected = model(x, true_values=values, intervene=mask)["y"]
        torch.testing.assert_close(sweep[k], expected, atol=TOLERANCE, rtol=0, msg=f"point {k}")
