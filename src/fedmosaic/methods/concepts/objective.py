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

    def loss(
        self,
        model: ConceptModel,
        x: Tensor,
        values: Tensor,
        generator: torch.Generator | None = None,
        *,
        intervene: Tensor | None = None,
    ) -> Tensor:
        """The loss of a batch; with a generator, training-time interventions are drawn (:meth:`interventions`).

        ``intervene`` gives interventions drawn beforehand instead.
        """
        if generator is not None:
            intervene = self.interventions(values, generator)
        nodes, sums, counts = model.cross_entropies(x, values, intervene=intervene)
        return self.weighted(nodes, sums, counts, self.node_weights(nodes))

    @torch.no_grad()
    def validation(self, model: ConceptModel, x: Tensor, values: Tensor) -> dict[str, float]:
        """The loss without interventions (``val_loss``) and, with task labels, the task's cross-entropy (``val_task_loss``)."""
        nodes, sums, counts = model.cross_entropies(x, values)
        scores = {"val_loss": float(self.weighted(nodes, sums, counts, self.node_weights(nodes)))}
        task = nodes.index(self.graph.task)
        if self.graph.task in self.labeled and bool(counts[task] > 0):
            scores["val_task_loss"] = float(sums[task] / counts[task])
        return scores

    def node_weights(self, nodes: tuple[str, ...]) -> Tensor:
        """Each of ``nodes``' weight in the loss: ``gamma`` for a labeled concept, ``1 - gamma`` for a labeled task, else 0."""
        return torch.tensor([self._weight(node) for node in nodes])

    def weighted(self, nodes: tuple[str, ...], sums: Tensor, counts: Tensor, weights: Tensor) -> Tensor:
        """The loss from ``nodes``' summed cross-entropies and label counts (:meth:`ConceptModel.cross_entropies`).

        Each node's mean cross-entropy over the rows that label it, times its
        weight (:meth:`node_weights`), summed over the nodes some row labels;
        with ``concept_mean`` the concepts' weights are divided by how many
        such concepts there are. The node dimension is the last: several
        clients' stacked terms and weights give each client's loss.
        """
        means = sums / counts.clamp(min=1)
        weights = weights.to(means)
        used = (counts > 0) & (weights > 0)
        if self.concept_mean:
            concepts = used & torch.tensor([node != self.graph.task for node in nodes], device=means.device)
            weights = torch.where(concepts, weights / concepts.sum(dim=-1, keepdim=True).clamp(min=1), weights)
        return torch.where(used, weights * means, means.new_zeros(())).sum(dim=-1)

    def _weight(self, node: str) -> float:
        if node not in self.labeled:
            return 0.0
        return 1.0 - self.gamma if node == self.graph.task else self.gamma

    def interventions(self, values: Tensor, generator: torch.Generator) -> Tensor:
        """Where a batch is intervened on: each labeled concept's known value with ``intervention_prob``.

        Draws one uniform number per (row, labeled concept) from ``generator``
        (none without such concepts or with a zero probability).
        """
        mask = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
        columns = [self.graph.nodes.index(n) for n in self.labeled if n != self.graph.task]
        if columns and self.intervention_prob > 0:
            draws = torch.rand((len(values), len(columns)), generator=generator).to(values.device)
            mask[:, columns] = (draws < self.intervention_prob) & (
                values[:, columns] >= 0
            )  # never intervene with an unknown value
        return mask
