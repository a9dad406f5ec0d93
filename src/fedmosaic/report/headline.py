"""What a person reads first: the metrics that answer the comparison, named and in units.

Metric names in ``results.json`` are open-ended; the ones listed in
:data:`LABELS` get a human header and a unit, any other keeps its name. Each
kind of task (F-CMs concepts, horizontal classification, vertical) has its
headline metrics, shown when a run reports them.

Examples
--------
>>> label("concept_accuracy")
'Concept accuracy (%)'
>>> format_headline({"accuracy": 0.8565, "accuracy_std": 0.1191}, "accuracy")
'85.7 ± 11.9'
>>> format_headline({"loss": 0.25}, "loss")
'0.250'
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedmosaic.report.formatting import MISSING
from fedmosaic.report.series import final_metric_names, mean_std


@dataclass(frozen=True)
class MetricLabel:
    """How a metric is named for a person.

    Attributes
    ----------
    name : str
        Short header, e.g. ``"Task accuracy"``.
    percent : bool
        Whether the value is a fraction shown in percent.
    """

    name: str
    percent: bool


LABELS: dict[str, MetricLabel] = {
    "accuracy": MetricLabel("Task accuracy", True),
    "concept_accuracy": MetricLabel("Concept accuracy", True),
    "balanced_concept_accuracy": MetricLabel("Balanced concept accuracy", True),
    "coverage": MetricLabel("Concept coverage", True),
    "full_intervention_accuracy": MetricLabel("Accuracy, all concepts set", True),
    "noisy_accuracy": MetricLabel("Accuracy, noisy inputs", True),
    "noisy_full_intervention_accuracy": MetricLabel("Accuracy, noisy, all concepts set", True),
    "unlabeled_intervention_accuracy": MetricLabel("Accuracy, unlabeled concepts set", True),
    "bayes_optimal_accuracy": MetricLabel("Bayes ceiling", True),
    "pretrained_accuracy": MetricLabel("Pre-trained accuracy", True),
    "colour_reliance": MetricLabel("Colour reliance", False),
    "concepts": MetricLabel("Concepts", False),
    "loss": MetricLabel("Loss", False),
    "train_loss": MetricLabel("Training loss", False),
    "val_loss": MetricLabel("Validation loss", False),
    "best_round": MetricLabel("Best round", False),
    "uploaded_tensors": MetricLabel("Tensors uploaded", False),
    "param_change_ratio": MetricLabel("Parameter change ratio", False),
}
"""Human names of the metrics fedmosaic reports; other metrics keep their key."""

HEADLINE: dict[str, tuple[str, ...]] = {
    "concepts": ("accuracy", "concept_accuracy", "balanced_concept_accuracy", "coverage", "full_intervention_accuracy"),
    "classification": ("accuracy", "colour_reliance", "loss"),
    "vertical": ("accuracy", "loss"),
}
"""Headline metrics of each kind of task, in the order shown."""


def label(metric: str) -> str:
    """Return the header of ``metric``: its human name and unit, or the key itself."""
    found = LABELS.get(metric)
    if found is None:
        return metric
    return f"{found.name} (%)" if found.percent else found.name


def is_percent(metric: str) -> bool:
    """Whether ``metric`` is a fraction shown in percent (known accuracies and the ``accuracy_*`` family)."""
    found = LABELS.get(metric)
    return found.percent if found is not None else metric.startswith("accuracy_")


def format_headline(metrics: Mapping[str, float], metric: str) -> str:
    """Format ``metric`` in its unit: percent with one decimal, otherwise three; ``± std`` when reported."""
    found = mean_std(metrics, metric)
    if found is None:
        return MISSING
    value, std = found
    if is_percent(metric):
        return f"{100 * value:.1f}" + ("" if std is None else f" ± {100 * std:.1f}")
    return f"{value:.3f}" + ("" if std is None else f" ± {std:.3f}")


def headline_metrics(results: Mapping[str, Any], kind: str) -> list[str]:
    """Return the headline metrics of ``kind`` that some run reports in its final metrics."""
    present = set(final_metric_names(results))
    return [metric for metric in HEADLINE.get(kind, ("accuracy", "loss")) if metric in present]


def task_kind(results: Mapping[str, Any]) -> str:
    """Return the kind of task the runs solve: ``"concepts"``, ``"classification"`` or ``"vertical"``.

    Read from the configured runs, so it works for a grid's results too;
    unknown methods count as classification.
    """
    from fedmosaic.methods.registry import METHODS

    runs = results["config"].get("runs", [])
    kinds = {METHODS[run["method"]].kind for run in runs if run.get("method") in METHODS}
    for kind in ("concepts", "vertical"):
        if kind in kinds:
            return kind
    return "classification"

