"""The F-CMs local objective: masked concept losses, task loss, interventions."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel


@dataclass(frozen=True)
class Objective:
    """The loss a client minimises.

    ``gamma * sum of the cross-entropies of the concepts it labels
    + (1 - gamma) * the task's cross-entropy`` (when it has task labels),
    or with ``concept_mean`` the mean over those concepts instead of the sum;
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

    def loss(self, model: ConceptModel, x: Tensor, values: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """The loss of a batch; with a generator, training-time interventions are drawn."""
        intervene = None if generator is None else self._interventions(values, generator)
        return self._weighted(*self._terms(model, x, values, intervene))

    @torch.no_grad()
    def validation(self, model: ConceptModel, x: Tensor, values: Tensor) -> dict[str, float]:
        """The loss without interventions (``val_loss``) and, with task labels, the task's cross-entropy (``val_task_loss``)."""
        nodes, means, counted = self._terms(model, x, values, None)
        scores = {"val_loss": float(self._weighted(nodes, means, counted))}
        task = nodes.index(self.graph.task)
        if self.graph.task in self.labeled and bool(counted[task]):
            scores["val_task_loss"] = float(means[task])
        return scores

    def _terms(
        self, model: ConceptModel, x: Tensor, values: Tensor, intervene: Tensor | None
    ) -> tuple[tuple[str, ...], Tensor, Tensor]:
        """Every node's mean cross-entropy over the rows that label it, and whether any row does."""
        nodes, sums, counts = model.cross_entropies(x, values, intervene=intervene)
        return nodes, sums / counts.clamp(min=1), counts > 0

    def _weighted(self, nodes: tuple[str, ...], means: Tensor, counted: Tensor) -> Tensor:
        """``gamma`` times the labeled concepts' terms plus ``1 - gamma`` times the task's, over counted nodes."""
        weights = torch.tensor([self._weight(node) for node in nodes], dtype=means.dtype, device=means.device)
        used = counted & (weights > 0)
        if self.concept_mean:
            concepts = used & torch.tensor([node != self.graph.task for node in nodes], device=means.device)
            weights = torch.where(concepts, weights / concepts.sum().clamp(min=1), weights)
        return torch.where(used, weights * means, means.new_zeros(())).sum()

    def _weight(self, node: str) -> float:
        if node not in self.labeled:
            return 0.0
        return 1.0 - self.gamma if node == self.graph.task else self.gamma

    def _interventions(self, values: Tensor, generator: torch.Generator) -> Tensor:
        mask = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
        columns = [self.graph.nodes.index(n) for n in self.labeled if n != self.graph.task]
        if columns and self.intervention_prob > 0:
            draws = torch.rand((len(values), len(columns)), generator=generator).to(values.device)
            mask[:, columns] = (draws < self.intervention_prob) & (
                values[:, columns] >= 0
            )  # never intervene with an unknown value
        return mask
