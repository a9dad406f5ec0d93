"""FedCFA's loss of one local batch."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.horizontal.fedcfa.counterfactual import counterfactuals, factor_scores
from fedmosaic.methods.horizontal.fedcfa.decorrelation import factor_decorrelation
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import split_model


def frozen_copy(module: nn.Module) -> nn.Module:
    """A copy of ``module`` in eval mode whose parameters take no gradient.

    Examples
    --------
    >>> from torch import nn
    >>> layer = nn.Linear(2, 2)
    >>> frozen = frozen_copy(layer)
    >>> frozen.weight.requires_grad, frozen.weight is layer.weight
    (False, False)
    """
    frozen = copy.deepcopy(module).eval()
    frozen.requires_grad_(False)
    return frozen


@dataclass
class CounterfactualObjective:
    """``w_ce CE(x) + w_fdc FDC(z) + w_pos CE(positive) + w_neg softCE(negative)``.

    A loss function for :func:`~fedmosaic.methods.training.train_epochs`.
    The real samples train the whole model; the counterfactual samples are
    built from detached factors and train the decoder only, as in the
    reference code.

    Parameters
    ----------
    split : int
        Where the model is cut (:func:`~fedmosaic.methods.horizontal.fedcfa.split.split_model`).
    reference_decoder : torch.nn.Module
        Decoder of the round's global model as received, frozen
        (:func:`frozen_copy`); it scores the factors.
    average_x : Tensor
        Global mean inputs, ``(M, *input_shape)``.
    average_y : Tensor
        Their mean one-hot labels, ``(M, C)``.
    params : FedCFAParams
        How many factors to replace, which ones (the positive and negative
        rules), and the loss weights.
    generator : torch.Generator
        Draws the global mean of each sample (derive it from the client context).
    """

    split: int
    reference_decoder: nn.Module
    average_x: Tensor
    average_y: Tensor
    params: FedCFAParams
    generator: torch.Generator
    _parts: tuple[nn.Module, nn.Module, nn.Module] | None = field(default=None, init=False, repr=False)

    def __call__(self, model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
        """The loss of the batch ``(x, y)`` under ``model``."""
        encoder, decoder = self._split(model)
        z = encoder(x)
        loss = self.params.ce_weight * F.cross_entropy(decoder(z), y)
        if self.params.fdc_weight > 0:
            loss = loss + self.params.fdc_weight * factor_decorrelation(z, self.params.fdc_variance_floor)
        return loss + self.counterfactual_loss(encoder, decoder, z.detach(), y)

    def counterfactual_loss(self, encoder: nn.Module, decoder: nn.Module, z: Tensor, y: Tensor) -> Tensor:
        """``w_pos CE(positive) + w_neg softCE(negative)`` for detached factors ``z``."""
        drawn = torch.randint(len(self.average_x), (len(y),), generator=self.generator).to(self.average_x.device)
        scores = factor_scores(self.reference_decoder, z, y)
        donor_z = self.encode_means(encoder, drawn)
        k = self.params.replaced(z.shape[1])
        rules = (self.params.positive_rule, self.params.negative_rule)
        samples = counterfactuals(z, y, donor_z, self.average_y[drawn], scores, k, rules)
        logits = decoder(torch.cat([samples.positive, samples.negative]))
        positive_logits, negative_logits = logits.split(len(y))
        positive = F.cross_entropy(positive_logits, y)
        negative = F.cross_entropy(negative_logits, samples.negative_target)
        return self.params.positive_weight * positive + self.params.negative_weight * negative

    def _split(self, model: nn.Module) -> tuple[nn.Module, nn.Module]:
        """``model``'s encoder and decoder, cut once per model (they share its layers, so they follow its training)."""
        if self._parts is None or self._parts[0] is not model:
            self._parts = (model, *split_model(model, self.split))
        return self._parts[1], self._parts[2]

    @torch.no_grad()
    def encode_means(self, encoder: nn.Module, drawn: Tensor) -> Tensor:
        """Factors of the drawn global means, without gradient.

        Encodes the whole global average dataset when it is no larger than
        the batch (each mean once), otherwise only the drawn means.
        """
        encoded: Tensor = (
            encoder(self.average_x)[drawn] if len(self.average_x) <= len(drawn) else encoder(self.average_x[drawn])
        )
        return encoded
