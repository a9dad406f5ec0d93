"""Tests of the F-CMs concept-based models: outputs, interventions, growth, rewiring, freezing."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from fedmosaic.errors import FedmosaicError
from fedmosaic.methods.concepts.models import (
    ConceptGraph,
    ConceptModel,
    ConceptModelParams,
    build_concept_model,
)

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
CAUSAL = ("cgm", "c2bm")
BOTTLENECK = ("cbm", "cem")
INPUT_DIM = 4
# The part of a node's module that makes its logits (where an intervention cuts the node off).
LOGIT_PART = {"cbm": "", "cem": "scorer.", "cgm": "scorer.", "c2bm": ""}


def _graph(cards: dict[str, int], parents: dict[str, tuple[str, ...]], task: str = "y") -> ConceptGraph:
    return ConceptGraph(tuple(cards), task, cards, parents)


CHAIN = _graph({"a": 2, "b": 3, "y": 2}, {"b": ("a",), "y": ("b",)})
# CHAIN plus c (a new parent of y) and d (an unrelated root).
GROWN = _graph({"a": 2, "b": 3, "y": 2, "c": 2, "d": 3}, {"b": ("a",), "y": ("b", "c")})


def _params(family: str, **overrides: object) -> ConceptModelParams:
    return ConceptModelParams.model_validate(
        {"family": family, "encoder_hidden": 8, "embedding_size": 3, "decoder_hidden": 5, **overrides}
    )


def _model(family: str, graph: ConceptGraph = CHAIN, seed: int = 0, **overrides: object) -> ConceptModel:
    return build_concept_model(INPUT_DIM, graph, _params(family, **overrides), seed=seed)


def _inputs(n: int = 6) -> torch.Tensor:
    return torch.randn(n, INPUT_DIM, generator=torch.Generator().manual_seed(7))


def _fix(graph: ConceptGraph, n: int, values: dict[str, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``true_values`` and ``intervene`` that feed each node of ``values`` that value in every row."""
    truth = torch.full((n, len(graph.nodes)), -1, dtype=torch.int64)
    mask = torch.zeros(n, len(graph.nodes), dtype=torch.bool)
    for node, value in values.items():
        truth[:, graph.nodes.index(node)] = value
        mask[:, graph.nodes.index(node)] = True
    return truth, mask


def _fixed(model: ConceptModel, x: torch.Tensor, values: dict[str, int]) -> dict[str, torch.Tensor]:
    truth, mask = _fix(model.graph, len(x), values)
    return model(x, true_values=truth, intervene=mask)


def _snapshot(model: ConceptModel) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _under(model: ConceptModel, prefix: str) -> dict[str, torch.Tensor]:
    return {name: p for name, p in model.named_parameters() if name.startswith(prefix)}


# --------------------------------------------------------------------------- ConceptGraph


def test_graph_orders_nodes_parents_first_with_ties_by_name_and_finds_ancestors() -> None:
    graph = _graph({"z": 2, "m": 2, "a": 2, "y": 2}, {"y": ("z", "m"), "m": ("a",)})

    order, ancestors = graph.topological_order(), graph.ancestors("y")

    assert order == ("a", "m", "z", "y")
    assert ancestors == {"a", "m", "z"}
    assert graph.ancestors("a") == frozenset()


def test_graph_sorts_parents_in_node_order_and_makes_missing_nodes_roots() -> None:
    graph = ConceptGraph(("b", "a", "y"), "y", {"a": 2, "b": 2, "y": 2}, {"y": ("a", "b")})

    assert graph.parents == {"b": (), "a": (), "y": ("b", "a")}


@pytest.mark.parametrize(
    ("nodes", "task", "cards", "parents", "reason"),
    [
        (("a", "y"), "t", {"a": 2, "y": 2}, {}, "task 't'"),
        (("a", "a", "y"), "y", {"a": 2, "y": 2}, {}, "duplicate node 'a'"),
        (("a", "y"), "y", {"a": 1, "y": 2}, {}, "cardinality of 'a'"),
        (("a", "y"), "y", {"y": 2}, {}, "cardinality of 'a'"),
        (("a", "y"), "y", {"a": 2, "y": 2, "q": 2}, {}, "unknown nodes \\['q'\\]"),
        (("a", "y"), "y", {"a": 2, "y": 2}, {"y": ("q",)}, "parents of 'y' are not nodes"),
        (("a", "y"), "y", {"a": 2, "y": 2}, {"y": ("y",)}, "'y' is its own parent"),
        (("a", "y"), "y", {"a": 2, "y": 2}, {"y": ("a",), "a": ("y",)}, "cycle through \\['a', 'y'\\]"),
    ],
)
def test_graph_rejects_invalid_descriptions_naming_the_problem(
    nodes: tuple[str, ...], task: str, cards: dict[str, int], parents: dict[str, tuple[str, ...]], reason: str
) -> None:
    with pytest.raises(FedmosaicError, match=reason):
        ConceptGraph(nodes, task, cards, parents)


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize("document", [{"family": "dcr"}, {"embedding_size": "8"}, {"init": "normal"}, {"hiden": 3}])
def test_params_reject_unknown_keys_values_and_types(document: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ConceptModelParams.model_validate(document)


# --------------------------------------------------------------------------- construction and forward


@pytest.mark.parametrize("family", FAMILIES)
def test_forward_returns_logits_for_every_node_with_its_cardinality_in_node_order(family: str) -> None:
    model = _model(family, GROWN)

    outputs = model(_inputs(5))

    assert list(outputs) == list(GROWN.nodes)
    assert {node: tuple(t.shape) for node, t in outputs.items()} == {
        node: (5, GROWN.cardinalities[node]) for node in GROWN.nodes
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_builds_identical_models_and_another_seed_a_different_one(family: str) -> None:
    first, again, other = _snapshot(_model(family)), _snapshot(_model(family)), _snapshot(_model(family, seed=1))

    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["encoder.0.weight"], other["encoder.0.weight"])


@pytest.mark.parametrize("family", FAMILIES)
def test_building_and_growing_leave_the_global_generator_untouched(family: str) -> None:
    torch.manual_seed(123)
    state = torch.random.get_rng_state()

    _model(family, init="orthogonal").adapt(GROWN)

    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_parameter_lives_under_the_encoder_or_its_node_prefix(family: str) -> None:
    model = _model(family, GROWN)
    prefixes = [model.ENCODER_PREFIX, *(model.node_prefix(node) for node in GROWN.nodes)]

    owners = {name: [p for p in prefixes if name.startswith(p)] for name, _ in model.named_parameters()}

    assert all(len(found) == 1 for found in owners.values())
    assert all(_under(model, model.node_prefix(node)) for node in GROWN.nodes)


def test_node_prefixes_are_distinct_for_names_with_dots_and_attribute_names() -> None:
    names = ("a.b", "a%2Eb", "a_dot_b", "keys", "training", "a", "y")
    graph = _graph(dict.fromkeys(names, 2), {"y": names[:-1]})
    model = _model("cgm", graph)

    prefixes = [model.node_prefix(node) for node in names]
    outputs = model(_inputs())

    assert all(not p.startswith(q) for p in prefixes for q in prefixes if p != q)
    assert list(outputs) == list(names)


# --------------------------------------------------------------------------- interventions


@pytest.mark.parametrize("family", FAMILIES)
def test_intervening_a_node_keeps_its_own_logits_and_changes_its_descendants(family: str) -> None:
    model, x = _model(family), _inputs()
    plain = model(x)

    fixed = [_fixed(model, x, {"a": value}) for value in (0, 1)]

    for outputs in fixed:
        torch.testing.assert_close(outputs["a"], plain["a"], rtol=0, atol=0)
    assert not torch.allclose(fixed[0]["y"], fixed[1]["y"])
    if family in CAUSAL:  # a -> b -> y: the child and the grandchild move
        assert not torch.allclose(fixed[0]["b"], fixed[1]["b"])


@pytest.mark.parametrize("family", FAMILIES)
def test_an_intervened_node_feeds_its_true_value_whatever_its_prediction(family: str) -> None:
    model, x = _model(family), _inputs()
    before = _fixed(model, x, {"a": 1})

    with torch.no_grad():
        for p in _under(model, model.node_prefix("a") + LOGIT_PART[family]).values():
            p.add_(1.0)
    after = _fixed(model, x, {"a": 1})

    assert not torch.allclose(before["a"], after["a"])
    for node in ("b", "y"):
        torch.testing.assert_close(after[node], before[node])


@pytest.mark.parametrize("family", FAMILIES)
def test_interventions_apply_only_to_chosen_rows_with_known_values(family: str) -> None:
    model, x = _model(family), _inputs(4)
    truth, mask = _fix(CHAIN, 4, {"a": 1})
    truth[1, 0] = -1  # unknown: not intervened although asked
    mask[2, 0] = False

    outputs, plain, full = model(x, true_values=truth, intervene=mask), model(x), _fixed(model, x, {"a": 1})

    torch.testing.assert_close(outputs["y"][1:3], plain["y"][1:3])
    torch.testing.assert_close(outputs["y"][[0, 3]], full["y"][[0, 3]])


def test_forward_rejects_interventions_without_true_values_or_of_the_wrong_shape() -> None:
    model, x = _model("cbm"), _inputs(3)
    truth, mask = _fix(CHAIN, 3, {"a": 1})

    with pytest.raises(ValueError, match="needs true_values"):
        model(x, intervene=mask)
    with pytest.raises(ValueError, match="intervene must have shape"):
        model(x, true_values=truth, intervene=mask[:, :2])
    with pytest.raises(ValueError, match="cardinality"):
        model(x, true_values=truth + 5, intervene=mask)


# --------------------------------------------------------------------------- growth


@pytest.mark.parametrize("family", FAMILIES)
def test_growth_adds_modules_for_new_concepts_and_keeps_every_other_parameter_bit_identical(family: str) -> None:
    model = _model(family)
    before = _snapshot(model)
    task_prefix = model.node_prefix("y")

    report = model.adapt(GROWN)
    after = _snapshot(model)

    assert (report.added_nodes, report.rewired_nodes) == (("c", "d"), ("y",))
    assert set(before) <= set(after)
    assert all(torch.equal(after[name], value) for name, value in before.items() if not name.startswith(task_prefix))
    assert _under(model, model.node_prefix("c"))
    assert _under(model, model.node_prefix("d"))
    assert model.graph == GROWN


@pytest.mark.parametrize("family", FAMILIES)
def test_zero_init_growth_leaves_old_outputs_unchanged_whatever_the_new_concepts_feed(family: str) -> None:
    model, x = _model(family), _inputs()
    old = model(x)

    model.adapt(GROWN)
    grown = [model(x), _fixed(model, x, {"c": 0, "d": 0}), _fixed(model, x, {"c": 1, "d": 2})]

    for outputs in grown:
        for node in CHAIN.nodes:
            torch.testing.assert_close(outputs[node], old[node])


@pytest.mark.parametrize("family", FAMILIES)
def test_orthogonal_init_growth_connects_new_concepts_and_keeps_unaffected_outputs(family: str) -> None:
    model, x = _model(family, init="orthogonal"), _inputs()
    old = model(x)

    model.adapt(GROWN)
    fed = [_fixed(model, x, {"c": value}) for value in (0, 1)]

    assert not torch.allclose(fed[0]["y"], fed[1]["y"])
    for node in ("a", "b"):
        torch.testing.assert_close(fed[0][node], old[node])


@pytest.mark.parametrize(("family", "width"), [("cbm", "cardinality"), ("cem", "embedding")])
def test_task_decoder_first_layer_widens_by_each_new_concepts_message(family: str, width: str) -> None:
    model = _model(family)
    name = model.node_prefix("y") + "layers.0.weight"
    old = model.get_parameter(name).detach().clone()
    message = {node: (card if width == "cardinality" else 3) for node, card in GROWN.cardinalities.items()}

    model.adapt(GROWN)
    new = model.get_parameter(name)

    assert new.shape == (5, message["a"] + message["b"] + message["c"] + message["d"])
    assert torch.equal(new[:, : old.shape[1]], old)
    assert not new[:, old.shape[1] :].any()


@pytest.mark.parametrize("family", FAMILIES)
def test_growing_gives_the_encoder_and_new_nodes_the_weights_of_a_model_built_with_them(family: str) -> None:
    grown = _model(family)
    grown.adapt(GROWN)
    built = _model(family, _graph({"d": 3, "c": 2, "a": 2, "b": 3, "y": 2}, GROWN.parents))  # another order

    expected = _snapshot(built)
    for prefix in (built.ENCODER_PREFIX, built.node_prefix("c"), built.node_prefix("d")):
        for name, value in _under(grown, prefix).items():
            assert torch.equal(value, expected[name])


def test_growth_follows_the_models_dtype_and_keeps_requires_grad() -> None:
    model = _model("c2bm").to(torch.float64)
    for p in _under(model, model.node_prefix("y")).values():
        p.requires_grad_(False)

    model.adapt(GROWN)
    outputs = model(_inputs().double())

    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert not any(p.requires_grad for p in _under(model, model.node_prefix("y")).values())
    assert outputs["y"].dtype == torch.float64


# --------------------------------------------------------------------------- rewiring (CGM, C2BM)

TWO_PARENTS = _graph({"a": 2, "b": 3, "c": 2, "y": 2}, {"y": ("a", "b")})
REFUSED = _graph({"a": 2, "b": 3, "c": 2, "y": 2}, {"y": ("a", "c")})


def _parent_blocks(model: ConceptModel, family: str) -> tuple[torch.Tensor, ...]:
    """Y's weights (and biases) with the parents' features on dim 1."""
    prefix = model.node_prefix("y")
    if family == "cgm":
        return (model.get_parameter(prefix + "values.0.weight"),)
    last = model.get_submodule(prefix.rstrip(".")).generator[-1]
    return last.weight.view(2, -1, last.in_features), last.bias.view(2, -1)


@pytest.mark.parametrize(("family", "width"), [("cgm", {"a": 3, "b": 3, "c": 3}), ("c2bm", {"a": 2, "b": 3, "c": 2})])
def test_rewiring_keeps_columns_of_retained_parents_zeroes_new_ones_and_drops_removed(
    family: str, width: dict[str, int]
) -> None:
    model = _model(family, TWO_PARENTS)
    old = [t.detach().clone() for t in _parent_blocks(model, family)]

    report = model.adapt(REFUSED)
    new = _parent_blocks(model, family)

    assert report.rewired_nodes == ("y",)
    for before, after in zip(old, new, strict=True):
        assert after.shape[1] == width["a"] + width["c"]
        assert torch.equal(after[:, : width["a"]], before[:, : width["a"]])
        assert not after[:, width["a"] :].any()


@pytest.mark.parametrize("family", CAUSAL)
def test_after_rewiring_a_node_ignores_its_former_parent(family: str) -> None:
    model, x = _model(family, TWO_PARENTS), _inputs()

    model.adapt(REFUSED)
    fed = [_fixed(model, x, {"b": value}) for value in (0, 2)]

    torch.testing.assert_close(fed[0]["y"], fed[1]["y"])


@pytest.mark.parametrize("family", CAUSAL)
def test_a_root_that_gains_a_parent_is_rewired_to_read_it(family: str) -> None:
    roots = _graph({"a": 2, "b": 3, "y": 2}, {"y": ("a",)})
    model, x = _model(family, roots, init="orthogonal"), _inputs()

    report = model.adapt(CHAIN)
    fed = [_fixed(model, x, {"a": value}) for value in (0, 1)]

    assert report.rewired_nodes == ("b", "y")
    assert not torch.allclose(fed[0]["b"], fed[1]["b"])


# --------------------------------------------------------------------------- adaptation report


@pytest.mark.parametrize(
    ("family", "parents", "before", "changed", "after"),
    [
        # encoder 3*4+4 + 4*4+4 = 36; a: values 4*6+6 = 30, scorer 6*2+2 = 14; y 2*2+2 = 6 -> 86.
        # b: values 4*9+9 = 45, scorer 9*3+3 = 30, new; y weight 2*5 = 10 reshaped (bias kept) -> 85;
        # 36 + 44 + 75 + (10 + 2) = 167.
        ("cbm", {}, 86, 85, 167),
        # encoder 36; a 4*2+2 = 10; y 4*5+5 = 25 and 5*(2*2)+2*2 = 24 -> 95.
        # b 15 new; y last layer 5*(2*5)+2*5 = 60 reshaped -> 75; 36 + 10 + 15 + 25 + 60 = 146.
        ("c2bm", {"y": ("a",)}, 95, 75, 146),
    ],
)
def test_change_ratio_counts_new_and_reshaped_parameters_on_a_hand_counted_case(
    family: str, parents: dict[str, tuple[str, ...]], before: int, changed: int, after: int
) -> None:
    small = _graph({"a": 2, "y": 2}, parents)
    grown = _graph({"a": 2, "b": 3, "y": 2}, dict.fromkeys(parents, ("a", "b")))
    model = build_concept_model(3, small, _params(family, encoder_hidden=4, decoder_hidden=5, decoder="linear"), seed=0)

    report = model.adapt(grown)

    assert (report.params_before, report.params_changed, report.params_after) == (before, changed, after)
    assert report.change_ratio == changed / before
    assert sum(p.numel() for p in model.parameters()) == after


@pytest.mark.parametrize("family", FAMILIES)
def test_adapting_to_the_same_graph_changes_nothing(family: str) -> None:
    model = _model(family)
    before = dict(model.named_parameters())

    report = model.adapt(CHAIN)

    assert (report.added_nodes, report.rewired_nodes, report.params_changed, report.change_ratio) == ((), (), 0, 0.0)
    assert all(p is before[name] for name, p in model.named_parameters())


@pytest.mark.parametrize(
    ("graph", "reason"),
    [
        (_graph({"a": 2, "y": 2}, {"y": ("a",)}), "cannot be removed \\(missing \\['b'\\]\\)"),
        (_graph({"a": 2, "b": 3, "y": 2}, {"b": ("a",)}, task="b"), "task cannot change"),
        (_graph({"a": 2, "b": 4, "y": 2}, {"b": ("a",), "y": ("b",)}), "cardinality of 'b' cannot change"),
    ],
)
def test_adapt_rejects_graphs_that_drop_nodes_or_change_the_task_or_a_cardinality(
    graph: ConceptGraph, reason: str
) -> None:
    with pytest.raises(FedmosaicError, match=reason):
        _model("cgm").adapt(graph)


# --------------------------------------------------------------------------- dependencies and freezing


@pytest.mark.parametrize(
    ("family", "y_needs", "b_needs"),
    [("cbm", "abcdy", "b"), ("cem", "abcdy", "b"), ("cgm", "abcy", "ab"), ("c2bm", "abcy", "ab")],
)
def test_dependencies_are_all_concepts_for_bottlenecks_and_ancestors_for_graphs(
    family: str, y_needs: str, b_needs: str
) -> None:
    model = _model(family, GROWN)

    assert model.dependencies(["y"]) == frozenset(y_needs)
    assert model.dependencies(["b"]) == frozenset(b_needs)
    assert model.dependencies(["b", "d"]) == frozenset(b_needs) | {"d"}


@pytest.mark.parametrize("family", FAMILIES)
def test_freezing_a_parents_module_by_prefix_keeps_its_gradients_none(family: str) -> None:
    model = _model(family)
    frozen = _under(model, model.node_prefix("a"))
    for p in frozen.values():
        p.requires_grad_(False)

    F.cross_entropy(model(_inputs())["y"], torch.tensor([0, 1, 0, 1, 1, 0])).backward()

    assert all(p.grad is None for p in frozen.values())
    assert all(p.grad is not None for p in _under(model, model.node_prefix("y")).values())
    assert all(p.grad is not None for p in _under(model, model.ENCODER_PREFIX).values())
