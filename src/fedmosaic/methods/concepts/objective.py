"""The F-CMs local objective: masked concept losses, task loss, interventions."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.concepts.models import ConceptGraph


@dataclass(frozen=True)
class Objective:
    """The loss a client minimises.

    ``gamma * sum of the cross-entropies of the concepts it labels
    + (1 - gamma) * the task's cross-entropy`` (when it has task labels),
    or with ``concept_mean`` the mean over those concepts instead of the sum
    (the reference code's);
    each cross-entropy is over the rows labeled for its node (a value of -1
    is unlabeled).
    During training each labeled concept of each sample is intervened on
    (replaced by its true value downstream) with ``intervention_prob``.

    Parameters
    ----------
    graph : ConceptGraph
        The model's nodes; columns of the value tensors follow ``graph.nodes``.
    labeled : tuple of str
        The nodes the client has labels for (the task may be one).
    gamma : float
        Weight of the concept losses.
    intervention_prob : float
        Probability of a training-time intervention per (sample, labeled concept).
    concept_mean : bool, default False
        Average the concept terms instead of adding them up.
    """

    graph: ConceptGraph
    labeled: tuple[str, ...]
    gamma: float
    intervention_prob: float
    concept_mean: bool = False

    def loss(self, model: nn.Module, x: Tensor, values: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """The loss of a batch; with a generator, training-time interventions are drawn."""
        intervene = None if generator is None else self._interventions(values, generator)
        return self._weighted(self._terms(model(x, true_values=values, intervene=intervene), values))

    @torch.no_grad()
    def validation(self, model: nn.Module, x: Tensor, values: Tensor) -> dict[str, float]:
        """The loss without interventions (``val_loss``) and, with task labels, the task's cross-entropy (``val_task_loss``)."""
        terms = self._terms(model(x), values)
        scores = {"val_loss": float(self._weighted(terms))}
        if self.graph.task in terms:
            scores["val_task_loss"] = float(terms[self.graph.task])
        return scores

    def _terms(self, logits: dict[str, Tensor], values: Tensor) -> dict[str, Tensor]:
        """Mean cross-entropy of each labeled node."""
        terms = {}
        for node in self.labeled:
            node_logits, target = logits[node], values[:, self.graph.nodes.index(node)]
            known = target >= 0
            if not bool(known.all()):  # rows that do not label this node (-1) do not count
                node_logits, target = node_logits[known], target[known]
            if len(target) > 0:
                terms[node] = F.cross_entropy(node_logits, target)
        return terms

    def _weighted(self, terms: dict[str, Tensor]) -> Tensor:
        total = next(iter(terms.values())).new_zeros(()) if terms else torch.zeros(())
        concepts = sum(node != self.graph.task for node in terms)
        share = self.gamma / max(concepts, 1) if self.concept_mean else self.gamma
        for node, term in terms.items():
            weight = (1.0 - self.gamma) if node == self.graph.task else share
            if weight > 0:
                total = total + weight * term
        return total

    def _interventions(self, values: Tensor, generator: torch.Generator) -> Tensor:
        mask = torch.zeros(values.shape, dtype=torch.bool)
        columns = [self.graph.nodes.index(n) for n in self.labeled if n != self.graph.task]
        if columns and self.intervention_prob > 0:
            draws = torch.rand((len(values), len(columns)), generator=generator)
            mask[:, columns] = (draws < self.intervention_prob) & (
                values[:, columns] >= 0
            )  # never intervene with an unknown value
        return mask
