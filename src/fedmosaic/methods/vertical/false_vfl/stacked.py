"""Several parties' networks evaluated as one batched computation.

Parties held in one process (the in-process engine runs every passive party
in the run's process) each run the same small networks on their own block.
Called one after another, per-call overhead rather than arithmetic is the
cost; stacked along a party dimension, each layer is one batched product.
Blocks of different widths are padded with zeros: a padded input column
meets a zero weight, a padded output feature is left out of the sums. The
parameters stay each party's own (the stacks are built from them on every
call), so gradients reach each party's parameters and its own optimizer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from fedmosaic.methods.vertical.networks import LOG_2PI, LOGVAR_RANGE, PartyModel, bernoulli_log_prob


def stacked_linear(layers: Sequence[nn.Linear], x: Tensor) -> Tensor:
    """``(K, n, in)`` through each party's own linear layer: ``(K, n, out)``, padded to the widest.

    Examples
    --------
    >>> layers = [nn.Linear(2, 3), nn.Linear(1, 2)]
    >>> x = torch.randn(2, 4, 2)
    >>> x[1, :, 1] = 0.0
    >>> out = stacked_linear(layers, x)
    >>> out.shape, torch.allclose(out[1, :, :2], layers[1](x[1, :, :1]))
    (torch.Size([2, 4, 3]), True)
    """
    inputs, outputs = x.shape[-1], max(layer.out_features for layer in layers)
    weight = torch.stack([pad_to(layer.weight, (outputs, inputs)) for layer in layers])
    bias = torch.stack([pad_to(layer.bias, (outputs,)) for layer in layers])
    return torch.baddbmm(bias[:, None, :], x, weight.transpose(1, 2))


def stacked_mlp(nets: Sequence[nn.Sequential], x: Tensor) -> Tensor:
    """``(K, n, in)`` through each party's own perceptron (:func:`~fedmosaic.methods.vertical.networks.mlp`)."""
    for modules in zip(*nets, strict=True):
        if isinstance(modules[0], nn.Linear):
            x = stacked_linear(modules, x)
        elif isinstance(modules[0], nn.ReLU):
            x = torch.relu_(x)  # the stacked Linear's fresh output
        else:
            raise TypeError(f"stacked_mlp: no stacked form of {type(modules[0]).__name__}")
    return x


def pad_to(tensor: Tensor, shape: Sequence[int]) -> Tensor:
    """``tensor`` in the leading corner of a zero (False) tensor of ``shape``; itself when it has that shape.

    Examples
    --------
    >>> pad_to(torch.ones(1, 2), (2, 3)).tolist()
    [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    if tuple(tensor.shape) == tuple(shape):
        return tensor
    full = tensor.new_zeros(tuple(shape))
    full[tuple(slice(0, size) for size in tensor.shape)] = tensor
    return full


class StackedParties:
    """The :class:`~fedmosaic.methods.vertical.networks.PartyModel` of several parties, evaluated together.

    Parameters
    ----------
    models : sequence of PartyModel
        One per party, all with the same hidden and latent widths, likelihood
        and mask model (blocks may differ in width).
    """

    def __init__(self, models: Sequence[PartyModel]) -> None:
        self.models = list(models)
        widths = [_block_width(model) for model in self.models]
        self.width = max(widths)
        device = next(self.models[0].parameters()).device
        self.features = torch.arange(self.width, device=device)[None, :] < torch.tensor(widths, device=device)[:, None]

    @staticmethod
    def takes(models: Sequence[PartyModel]) -> bool:
        """Whether every one of ``models`` has a stacked form: perceptrons only (no encoder of the user's own).

        Examples
        --------
        >>> StackedParties.takes([PartyModel(3, 8, 2, "gaussian")])
        True
        >>> StackedParties.takes([PartyModel(3, 8, 2, "gaussian", encoder_body=nn.Sequential(nn.Flatten(), nn.Linear(3, 8)))])
        False
        """
        return all(_is_mlp(model.encoder.net) and _is_mlp(model.decoder.net) for model in models)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Each party's local posterior ``(K, n, latent)`` mean and log-variance of its features ``(K, n, width)``."""
        mean, logvar = stacked_mlp([model.encoder.net for model in self.models], x).chunk(2, dim=-1)
        return mean, logvar.clamp(*LOGVAR_RANGE)

    def log_likelihood(self, x: Tensor, present: Tensor, h: Tensor) -> Tensor:
        """Each party's :meth:`~fedmosaic.methods.vertical.networks.PartyModel.log_likelihood`, ``(K, kappa, n)``.

        ``x`` ``(K, n, width)`` features, ``present`` ``(K, n)``, ``h`` ``(K, kappa, n, latent)``.
        """
        parties, kappa, n, _ = h.shape
        bernoulli = self.models[0].decoder.logvar is None
        if bernoulli:
            log_prob, out = self._bernoulli_log_prob(x, h), None
        else:
            out = self._decoded(h)
            logvars = [pad_to(model.decoder.logvar, (self.width,)) for model in self.models]  # type: ignore[arg-type]
            logvar = torch.stack(logvars).clamp(*LOGVAR_RANGE)[:, None, None, :]
            terms = -0.5 * (LOG_2PI + logvar + (x[:, None] - out) ** 2 * torch.exp(-logvar))
            log_prob = torch.where(self.features[:, None, None, :], terms, 0.0).sum(-1)
        total = torch.where(present[:, None, :], log_prob, 0.0)
        if self.models[0].mask is None:
            return total
        expected = torch.sigmoid(self._decoded(h)) if out is None else out
        stand_in = torch.where(present[:, None, :, None], x[:, None], expected)
        masks = [model.mask for model in self.models]
        logit = stacked_linear(masks, stand_in.flatten(1, 2)).view(parties, kappa, n)  # type: ignore[arg-type]
        return total + torch.where(present[:, None, :], F.logsigmoid(-logit), F.logsigmoid(logit))

    def _decoded(self, h: Tensor) -> Tensor:
        """Each party's decoder outputs ``(K, kappa, n, width)`` of ``h`` ``(K, kappa, n, latent)``."""
        parties, kappa, n, _ = h.shape
        flat = stacked_mlp([model.decoder.net for model in self.models], h.flatten(1, 2))
        return flat.view(parties, kappa, n, flat.shape[-1])  # the width named: n may be 0 (no party holds a row)

    def _bernoulli_log_prob(self, x: Tensor, h: Tensor) -> Tensor:
        """Each party's Bernoulli ``log p(x | h)`` ``(K, kappa, n)`` (:func:`~fedmosaic.methods.vertical.networks.bernoulli_log_prob`).

        A padded feature's logit is 0 (zero weights and bias) and its pixel 0:
        it adds ``-log 2``, which is taken back.
        """
        parties, kappa, n, _ = h.shape
        hidden = stacked_mlp([nn.Sequential(*list(model.decoder.net)[:-1]) for model in self.models], h.flatten(1, 2))
        last = [_last_layer(model) for model in self.models]
        weight = torch.stack([pad_to(layer.weight, (self.width, layer.in_features)) for layer in last])
        bias = torch.stack([pad_to(layer.bias, (self.width,)) for layer in last])
        log_prob = bernoulli_log_prob(x, hidden.view(parties, kappa, n, hidden.shape[-1]), weight, bias)
        return log_prob + ((~self.features).sum(-1) * math.log(2.0))[:, None, None]


def _is_mlp(net: nn.Module) -> bool:
    """Whether ``net`` is a perceptron :func:`stacked_mlp` evaluates: linear layers and ReLU only."""
    return all(isinstance(module, nn.Linear | nn.ReLU) for module in net.children())


def _block_width(model: PartyModel) -> int:
    """The width of a party's block: its decoder's outputs."""
    return _last_layer(model).out_features


def _last_layer(model: PartyModel) -> nn.Linear:
    """A party's decoder's last layer."""
    layer = model.decoder.net[-1]
    assert isinstance(layer, nn.Linear)  # mlp ends in a linear layer
    return layer
