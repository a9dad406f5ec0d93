"""What F-CMs are measured by: task and concept accuracy, coverage, intervention curves."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from fedmosaic.methods.concepts.models import ConceptModel
from fedmosaic.methods.concepts.task import LabeledConcepts


@torch.no_grad()
def accuracies(model: ConceptModel, test: LabeledConcepts, intervened: Sequence[str] = ()) -> dict[str, float]:
    """Task accuracy and mean concept accuracy of ``model`` on ``test``.

    Parameters
    ----------
    model : ConceptModel
        The model; only the nodes it has are evaluated.
    test : LabeledConcepts
        Samples labeled for every node.
    intervened : sequence of str, default ()
        Nodes replaced by their true value (test-time interventions).

    Returns
    -------
    dict
        ``task_accuracy`` and ``concept_accuracy`` (mean over the model's
        concepts, the task excluded; 0 when it has none).
    """
    model.eval()
    graph = model.graph
    values = torch.from_numpy(test.aligned(graph.nodes))
    mask = torch.zeros(values.shape, dtype=torch.bool)
    for node in intervened:
        mask[:, graph.nodes.index(node)] = True
    logits = model(torch.from_numpy(test.x), true_values=values, intervene=mask)

    def accuracy(node: str) -> float:
        column = graph.nodes.index(node)
        return float((logits[node].argmax(dim=1) == values[:, column]).float().mean())

    concepts = [n for n in graph.nodes if n != graph.task]
    return {
        "task_accuracy": accuracy(graph.task),
        "concept_accuracy": float(np.mean([accuracy(n) for n in concepts])) if concepts else 0.0,
    }


def coverage(model_nodes: Sequence[str], task: str, task_labeled: bool, true_ancestors: frozenset[str]) -> float:
    """Share of the task's true ancestors, plus the task, that the model predicts.

    The task counts only when some participating client has task labels.

    Examples
    --------
    >>> coverage(["a", "y"], "y", True, frozenset({"a", "b"}))
    0.6666666666666666
    """
    target = set(true_ancestors) | {task}
    predicted = {n for n in model_nodes if n != task} | ({task} if task_labeled else set())
    return len(predicted & target) / len(target)


def intervention_curve(model: ConceptModel, test: LabeledConcepts, order: Sequence[str]) -> list[float]:
    """Task accuracy as the first 0, 1, ..., all concepts of ``order`` are intervened on."""
    return [accuracies(model, test, order[:k])["task_accuracy"] for k in range(len(order) + 1)]


def random_order(concepts: Sequence[str], rng: np.random.Generator) -> list[str]:
    """The concepts in a random order drawn from ``rng``."""
    return [concepts[i] for i in rng.permutation(len(concepts))]
