"""What F-CMs are measured by: task and concept accuracy, coverage, intervention curves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from fedmosaic.methods.arrays import to_array, to_tensor
from fedmosaic.methods.concepts.models import ConceptModel
from fedmosaic.methods.concepts.task import LabeledConcepts


@torch.no_grad()
def predictions(model: ConceptModel, test: LabeledConcepts, intervened: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Predicted value (argmax) of every node of ``model`` on ``test``.

    Parameters
    ----------
    model : ConceptModel
        The model; only the nodes it has are predicted.
    test : LabeledConcepts
        Samples labeled for every node.
    intervened : sequence of str, default ()
        Nodes replaced by their true value downstream (test-time
        interventions); their own prediction is still the model's.

    Returns
    -------
    dict of str to numpy.ndarray
        int64 predictions of each node, in ``model.graph.nodes`` order.
    """
    model.eval()
    graph = model.graph
    values = to_tensor(test.aligned(graph.nodes))
    mask = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    for node in intervened:
        mask[:, graph.nodes.index(node)] = True
    logits = model(to_tensor(test.x), true_values=values, intervene=mask)
    return {node: _argmax(logits[node]) for node in graph.nodes}


def task_accuracy(model: ConceptModel, test: LabeledConcepts, intervened: Sequence[str] = ()) -> float:
    """Share of ``test`` whose task the model predicts, with the ``intervened`` nodes set to their true value."""
    task = model.graph.task
    return _accuracy(predictions(model, test, intervened)[task], test.aligned((task,))[:, 0])


def balanced_accuracy(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Mean over the values present in ``truth`` of their recall (0 for no samples).

    Plain accuracy is flattered by a rare value: always predicting the
    majority scores its share; balanced accuracy scores that ``1 / K``.

    Examples
    --------
    >>> import numpy as np
    >>> balanced_accuracy(np.array([0, 0, 0, 0]), np.array([0, 0, 0, 1]))
    0.5
    """
    present = np.unique(truth)
    if len(present) == 0:
        return 0.0
    return float(np.mean([np.mean(predicted[truth == value] == value) for value in present]))


def concept_scores(model: ConceptModel, test: LabeledConcepts, common: Iterable[str]) -> dict[str, Any]:
    """Task accuracy and concept accuracy, plain and balanced, over a common set and over the model's own concepts.

    Every run of a table is scored over the same ``common`` set (the task's
    true ancestors), a concept the model does not predict counting as wrong
    (accuracy 0), so that rows are comparable; the accuracy over the model's
    own concepts is reported beside it.

    Parameters
    ----------
    model : ConceptModel
        The model.
    test : LabeledConcepts
        Samples labeled for every node (those of ``common`` included).
    common : iterable of str
        The concepts every run is scored over (the task excluded).

    Returns
    -------
    dict
        ``task_accuracy``; ``concept_accuracy`` and
        ``balanced_concept_accuracy`` (means over ``common``; 0 when empty);
        ``own_concept_accuracy`` and ``own_balanced_concept_accuracy``
        (means over the model's concepts; 0 when it has none); and
        ``per_concept``: ``{name: {"accuracy": a, "balanced_accuracy": b}}``
        for every concept of the model or of ``common`` (0 where not predicted).
    """
    graph = model.graph
    predicted = predictions(model, test)
    own = [n for n in graph.nodes if n != graph.task]
    common = sorted(set(common) - {graph.task})
    per_concept: dict[str, dict[str, float]] = {}
    for node in sorted(set(own) | set(common)):
        truth = test.aligned((node,))[:, 0]
        hit = node in predicted
        per_concept[node] = {
            "accuracy": _accuracy(predicted[node], truth) if hit else 0.0,
            "balanced_accuracy": balanced_accuracy(predicted[node], truth) if hit else 0.0,
        }

    def mean(nodes: Sequence[str], key: str) -> float:
        return float(np.mean([per_concept[n][key] for n in nodes])) if nodes else 0.0

    return {
        "task_accuracy": _accuracy(predicted[graph.task], test.aligned((graph.task,))[:, 0]),
        "concept_accuracy": mean(common, "accuracy"),
        "balanced_concept_accuracy": mean(common, "balanced_accuracy"),
        "own_concept_accuracy": mean(own, "accuracy"),
        "own_balanced_concept_accuracy": mean(own, "balanced_accuracy"),
        "per_concept": per_concept,
    }


def _accuracy(predicted: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(predicted == truth)) if len(truth) else 0.0


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
    """Task accuracy as the first 0, 1, ..., all concepts of ``order`` are intervened on.

    One :meth:`~fedmosaic.methods.concepts.models.ConceptModel.intervention_sweep`: each point recomputes
    only the concept it adds and that concept's descendants, and equals :func:`task_accuracy` with the
    same concepts intervened.
    """
    model.eval()
    values = to_tensor(test.aligned(model.graph.nodes))
    truth = test.aligned((model.graph.task,))[:, 0]
    sweep = model.intervention_sweep(to_tensor(test.x), values, order)
    return [_accuracy(_argmax(logits), truth) for logits in sweep]


def _argmax(logits: Tensor) -> np.ndarray:
    """Each row's most likely value; ``logits`` (n, cardinality) is made contiguous first.

    A model's logits are transposed views of its ``(cardinality, n)`` outputs, on which ``argmax``
    over the last dimension is about three times slower than on a contiguous copy (same result).
    """
    return to_array(logits.contiguous().argmax(dim=1))


def random_order(concepts: Sequence[str], rng: np.random.Generator) -> list[str]:
    """The concepts in a random order drawn from ``rng``."""
    return [concepts[i] for i in rng.permutation(len(concepts))]
