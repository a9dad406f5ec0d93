"""An F-CMs model loaded from its folder predicts as the run's selected model did and can be intervened on."""

import numpy as np
import pytest
import torch

import fedmosaic
from fedmosaic.models.card import ModelFileError


def accuracy(probabilities: np.ndarray, truth: np.ndarray) -> float:
    """Share of rows whose most probable class is the truth, computed as the run computes it."""
    return float(np.mean(probabilities.argmax(1) == truth))


@pytest.mark.parametrize("family", ["cbm", "cem", "cgm", "c2bm"])
def test_the_loaded_model_gives_the_selected_models_logits_and_the_runs_test_metrics(asia_run, family: str) -> None:
    # Prepare
    run = asia_run(family)
    test = run.workload.splits.test
    selected = run.servers[0]._tested_model()
    # Execute
    model = fedmosaic.load_model(run.out)
    prediction = model.predict(test.x)
    # Assert
    with torch.no_grad():
        expected = selected(torch.from_numpy(test.x))[model.graph["task"]].numpy()
    np.testing.assert_array_equal(prediction.logits, expected)
    final = run.results["runs"][0]["final"]
    truth = {name: test.columns([name])[:, 0] for name in test.names}
    task = model.graph["task"]
    assert model.card["metrics"] == final
    assert accuracy(prediction.probabilities, truth[task]) == final["accuracy"]
    concept_accuracy = np.mean([accuracy(p, truth[name]) for name, p in prediction.concepts.items()])
    assert float(concept_accuracy) == final["concept_accuracy"]


def test_intervening_with_every_true_concept_gives_the_runs_full_intervention_accuracy(asia_run) -> None:
    # Prepare
    run = asia_run("cgm")
    test = run.workload.splits.test
    model = fedmosaic.load_model(run.out)
    task = model.graph["task"]
    # Execute
    prediction = model.intervene(test.x, {name: test.columns([name])[:, 0] for name in model.concepts})
    # Assert
    assert (
        accuracy(prediction.probabilities, test.columns([task])[:, 0])
        == run.results["runs"][0]["final"]["full_intervention_accuracy"]
    )


def test_setting_one_concept_changes_only_its_descendants(asia_run) -> None:
    # Prepare
    run = asia_run("cgm")
    model = fedmosaic.load_model(run.out)
    x = run.workload.splits.test.x[:50]
    graph = model.graph
    children = {n: [c for c, parents in graph["parents"].items() if n in parents] for n in graph["nodes"]}
    concept = next(n for n in model.concepts if children[n] and children[n] != [graph["task"]])
    descendants, stack = set(), list(children[concept])
    while stack:
        node = stack.pop()
        if node not in descendants:
            descendants.add(node)
            stack.extend(children[node])
    # Execute
    before = model.predict(x)
    after = model.intervene(x, {concept: model.concepts[concept][0]})
    # Assert
    changed = {n for n in model.concepts if not np.array_equal(before.concepts[n], after.concepts[n])}
    if not np.array_equal(before.probabilities, after.probabilities):
        changed.add(graph["task"])
    assert changed <= descendants | {concept}
    assert graph["task"] in changed
    assert concept in changed
    assert np.all(after.concepts[concept][:, 0] == 1.0)
    assert model.descendants(concept) == descendants


def test_in_a_bottleneck_model_setting_a_concept_changes_the_task_only(asia_run) -> None:
    run = asia_run("cbm")
    model = fedmosaic.load_model(run.out)
    x = run.workload.splits.test.x[:50]
    before, after = model.predict(x), model.intervene(x, {"smoke": "no"})
    assert [n for n in model.concepts if not np.array_equal(before.concepts[n], after.concepts[n])] == ["smoke"]
    assert not np.array_equal(before.probabilities, after.probabilities)
    assert model.descendants("smoke") == {model.graph["task"]}


def test_bad_interventions_are_one_line_errors(asia_run) -> None:
    run = asia_run("cbm")
    model = fedmosaic.load_model(run.out)
    x = run.workload.splits.test.x[:5]
    concept = next(iter(model.concepts))
    with pytest.raises(ModelFileError, match="unknown concept 'smok'; did you mean 'smoke'"):
        model.intervene(x, {"smok": "yes"})
    with pytest.raises(ModelFileError, match=f"{concept}=maybe: unknown category"):
        model.intervene(x, {concept: "maybe"})
    with pytest.raises(ModelFileError, match="is the task"):
        model.intervene(x, {model.graph["task"]: "yes"})
    with pytest.raises(ModelFileError, match="one per row"):
        model.intervene(x, {concept: ["yes", "no"]})


def test_results_keep_every_fused_graph_with_scores_margins_and_pruned_edges(asia_run) -> None:
    # Prepare
    run = asia_run("cgm")
    # Execute
    fusions = run.results["runs"][0]["artifacts"]["fusions"]
    model = fedmosaic.load_model(run.out)
    # Assert
    assert [f["round"] for f in fusions] == [1, 2]  # the graph is fused again when clients join
    task = model.graph["task"]
    for fusion in fusions:
        kept = {(e["source"], e["target"]) for e in fusion["edges"]}
        assert all(e["margin"] > 0 or e["target"] == task for e in fusion["edges"])
        assert all(0 <= e["score"] <= 1 for e in fusion["edges"] + fusion["removed"])
        assert not kept & {(e["source"], e["target"]) for e in fusion["removed"]}
    parents = model.graph["parents"]
    assert {(e["source"], e["target"]) for e in model.graph["edges"]} == {(p, n) for n in parents for p in parents[n]}
