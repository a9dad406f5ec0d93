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

from fedmosaic.report.formatting import MISSING, format_value
from fedmosaic.report.series import final_metric_names, mean_std


@dataclass(frozen=True)
class MetricLabel:
    """How a metric is named for a person.

    Attributes
    ----------
    name : str
        Short header, e.g. ``"Task accuracy"``.
    unit : str
        ``"%"`` for a fraction shown in percent, ``"points"`` for a
        difference of fractions shown in percentage points, ``""`` for a
        value shown as it is.
    """

    name: str
    unit: str

    @property
    def scaled(self) -> bool:
        """Whether the value is shown times 100."""
        return self.unit in ("%", "points")


LABELS: dict[str, MetricLabel] = {
    "accuracy": MetricLabel("Task accuracy", "%"),
    "concept_accuracy": MetricLabel("Concept accuracy", "%"),
    "balanced_concept_accuracy": MetricLabel("Balanced concept accuracy", "%"),
    "own_concept_accuracy": MetricLabel("Concept accuracy, own concepts", "%"),
    "own_balanced_concept_accuracy": MetricLabel("Balanced concept accuracy, own concepts", "%"),
    "coverage": MetricLabel("Concept coverage", "%"),
    "intervention_gain": MetricLabel("Intervention gain", "points"),
    "full_intervention_accuracy": MetricLabel("Accuracy, all concepts set", "%"),
    "noisy_accuracy": MetricLabel("Accuracy, noisy inputs", "%"),
    "noisy_full_intervention_accuracy": MetricLabel("Accuracy, noisy, all concepts set", "%"),
    "unlabeled_intervention_accuracy": MetricLabel("Accuracy, unlabeled concepts set", "%"),
    "bayes_optimal_accuracy": MetricLabel("Bayes ceiling", "%"),
    "probe_accuracy": MetricLabel("Linear probe of the task from x", "%"),
    "input_latent_std": MetricLabel("Latent scale before the noise", ""),
    "pretrained_accuracy": MetricLabel("Pre-trained accuracy", "%"),
    "colour_reliance": MetricLabel("Colour reliance", "points"),
    "own_shade_accuracy": MetricLabel("Accuracy, own shades", "%"),
    "swapped_shade_accuracy": MetricLabel("Accuracy, swapped shades", "%"),
    "concepts": MetricLabel("Concepts", ""),
    "loss": MetricLabel("Loss", ""),
    "train_loss": MetricLabel("Training loss", ""),
    "val_loss": MetricLabel("Validation loss", ""),
    "val_task_loss": MetricLabel("Validation task loss", ""),
    "dp_sgd_epsilon": MetricLabel("DP-SGD epsilon", ""),
    "best_round": MetricLabel("Best round", ""),
    "selection_loss": MetricLabel("Validation loss of the tested model", ""),
    "alternating_rounds": MetricLabel("Rounds of period-2 oscillation", ""),
    "uploaded_tensors": MetricLabel("Tensors uploaded", ""),
    "param_change_ratio": MetricLabel("Parameter change ratio", ""),
    "param_growth_ratio": MetricLabel("Parameter growth ratio", ""),
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
    return f"{found.name} ({found.unit})" if found.unit else found.name


def name_of(metric: str) -> str:
    """Return the human name of ``metric`` without its unit, or the key itself."""
    found = LABELS.get(metric)
    return metric if found is None else found.name


def is_percent(metric: str) -> bool:
    """Whether ``metric`` is shown times 100: percent or points, and the ``accuracy_*`` family."""
    found = LABELS.get(metric)
    return found.scaled if found is not None else metric.startswith("accuracy_")


def format_headline(metrics: Mapping[str, float], metric: str) -> str:
    """Format ``metric`` in its unit: percent with one decimal, otherwise three; ``± std`` when reported."""
    found = mean_std(metrics, metric)
    if found is None:
        return MISSING
    value, std = found
    if is_percent(metric):
        return f"{100 * value:.1f}" + ("" if std is None else f" ± {100 * std:.1f}")
    return format_value(value, std)


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
