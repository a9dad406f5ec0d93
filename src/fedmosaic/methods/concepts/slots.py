"""Slots, the named inputs of a node's module, and the growth of layers by slot.

A linear layer's input columns (or grouped outputs) are laid out slot by
slot; when the slots change, :func:`rewire_inputs` and
:func:`rewire_grouped_outputs` keep the weights of the slots that remain and
fill the others (:func:`new_weights`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Literal, NamedTuple

import torch
from torch import Tensor, nn


class Slot(NamedTuple):
    """One named input of a node's module.

    Parameters
    ----------
    source : str or None
        The node whose message fills the slot, or None for the encoding.
    width : int
        Number of input features.
    """

    source: str | None
    width: int


Fill = Callable[[tuple[int, ...]], Tensor]
"""Makes the initial weights of a new connection, given the tensor's shape."""


def new_weights(init: Literal["zero", "orthogonal"], seed: int) -> Fill:
    """The weights of new connections: zeros, or orthogonal from a generator seeded by ``seed``."""
    if init == "zero":
        return torch.zeros
    generator = torch.Generator().manual_seed(seed)
    return lambda shape: nn.init.orthogonal_(torch.empty(shape), generator=generator)


def _offsets(slots: Sequence[Slot]) -> dict[str | None, tuple[int, int]]:
    """Start and width of each slot's block of features."""
    offsets, start = {}, 0
    for slot in slots:
        offsets[slot.source] = (start, slot.width)
        start += slot.width
    return offsets


def _carry_over(old: Tensor, fresh: Tensor, dim: int, before: Sequence[Slot], after: Sequence[Slot]) -> Tensor:
    """``fresh`` (laid out by ``after`` along ``dim``) with the blocks of retained slots copied from ``old``."""
    old_offsets = _offsets(before)
    for source, (start, width) in _offsets(after).items():
        kept = old_offsets.get(source)
        if kept is not None and kept[1] == width:
            fresh.narrow(dim, start, width).copy_(old.narrow(dim, kept[0], width))
    return fresh


def _replace(module: nn.Module, name: str, value: Tensor) -> None:
    """Swap a parameter for ``value`` under the same name, device, dtype and ``requires_grad``."""
    old: nn.Parameter = getattr(module, name)
    setattr(module, name, nn.Parameter(value.to(old), requires_grad=old.requires_grad))


def rewire_inputs(linear: nn.Linear, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
    """Lay the input columns of ``linear`` out by ``after``; the bias is untouched."""
    width = sum(slot.width for slot in after)
    fresh = fill((linear.out_features, width))
    _replace(linear, "weight", _carry_over(linear.weight.detach(), fresh, 1, before, after))
    linear.in_features = width


def rewire_grouped_outputs(
    linear: nn.Linear, groups: int, before: Sequence[Slot], after: Sequence[Slot], fill: Fill
) -> None:
    """Lay the outputs of ``linear``, seen as (groups, slots), out by ``after``; new biases are 0."""
    width = sum(slot.width for slot in after)
    inputs = linear.in_features
    weight = fill((groups * width, inputs)).view(groups, width, inputs)
    _carry_over(linear.weight.detach().view(groups, -1, inputs), weight, 1, before, after)
    bias = torch.zeros(groups, width)
    _carry_over(linear.bias.detach().view(groups, -1), bias, 1, before, after)
    _replace(linear, "weight", weight.reshape(groups * width, inputs))
    _replace(linear, "bias", bias.reshape(groups * width))
    linear.out_features = groups * width


def leaky_mlp(widths: Sequence[int], *, activate_output: bool = False) -> nn.Sequential:
    """Linear layers through ``widths`` with LeakyReLU between them (and after the last one if asked)."""
    layers: list[nn.Module] = []
    for k, (inputs, outputs) in enumerate(pairwise(widths)):
        layers.append(nn.Linear(inputs, outputs))
        if activate_output or k < len(widths) - 2:
            layers.append(nn.LeakyReLU())
    return nn.Sequential(*layers)
