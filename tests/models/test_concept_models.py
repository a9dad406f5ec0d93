"""An F-CMs model loaded from its folder predicts as the run's selected model did and can be intervened on."""

import numpy as np
import pytest
import torch

import fedmosaic
from fedmosaic.models.card import ModelFileError


def accuracy(probabilities: np.ndarray, truth: np.ndarray) -> float:
    """Share of rows whose most probable class is the truth, computed as the run computes it (float32)."""
    return float(torch.from_numpy(probabilities.argmax(1) == truth).float().mean())


def asia(family: str) -> dict:
    return {
        "name": f"asia-{family}",
        "data": {"dataset": "bnlearn", "network": "asia", "samples": 1000},
        "concepts": {"num_clients": 4, "initial_clients": 2, "join_round": 2},
        "federation": {"rounds": 3, "workers": 1},
        "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
        "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": family}}}],
    }


@pytest.mark.parametrize("family", ["cbm", "cem", "cgm", "c2bm"])
def test_the_loaded_model_gives_the_selected_models_logits_and_the_runs_test_metrics(finished_run, family: str) -> None:
    # Prepare
    run = finished_run(asia(family))
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


def test_intervening_with_every_true_concept_gives_the_runs_full_intervention_accuracy(finished_run) -> None:
    # Prepare
    run = finished_run(asia("cgm"))
    test = run.workload.splits.test
    model = fedmosaic.load_model(run.out)
    task = model.graph["task"]
    # Execute
    prediction = model.intervene(test.x, {name: test.columns([name])[:, 0] for name in model.concepts})
    # Assert
    assert accuracy(prediction.probabilities, test.columns([task])[:, 0]) == run.results["runs"][0]["final"]["full_intervention_accuracy"]


def test_setting_one_concept_changes_only_its_descendants(finished_run) -> None:
    # Prepare
    run = finished_run(asia("cgm"))
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
    assert graph["task"] in changed and concept in changed
    assert np.all(after.concepts[concept][:, 0] == 1.0)


def test_bad_interventions_are_one_line_errors(finished_run) -> None:
    run = finished_run(asia("cbm"))
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
