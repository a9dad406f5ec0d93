"""The module of one node of a concept-based model (:class:`NodeBlock`) and its four kinds.

Each kind computes one node (:meth:`NodeBlock.forward`) and, for :mod:`~fedmosaic.methods.concepts.levels`,
a group of nodes of its kind at once (:meth:`NodeBlock.stacked_forward`) from their linear layers
stacked and zero-padded to the group's widest node (:meth:`NodeBlock.linears`, :meth:`NodeBlock.padded_rows`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import override

from fedmosaic.methods.concepts.model_params import ConceptModelParams
from fedmosaic.methods.concepts.slots import Fill, Slot, leaky_mlp, rewire_grouped_outputs, rewire_inputs


@dataclass(frozen=True)
class NodeSpec:
    """What a node's module is: its block class, outputs and named inputs.

    Parameters
    ----------
    block : type of NodeBlock
        The module class.
    cardinality : int
        Number of logits.
    slots : tuple of Slot
        The inputs, concatenated in this order.
    hidden : tuple of int, default ()
        Hidden widths (:class:`MLPHead` only).
    """

    block: type[NodeBlock]
    cardinality: int
    slots: tuple[Slot, ...]
    hidden: tuple[int, ...] = ()

    @property
    def width(self) -> int:
        """Number of input features."""
        return sum(slot.width for slot in self.slots)

    @property
    def sources(self) -> tuple[str, ...]:
        """The nodes whose messages the module reads."""
        return tuple(slot.source for slot in self.slots if slot.source is not None)

    def rewirable_to(self, other: NodeSpec) -> bool:
        """Whether ``other`` differs from this spec in its slots only."""
        return (self.block, self.cardinality, self.hidden) == (other.block, other.cardinality, other.hidden)


class NodeOutput(NamedTuple):
    """A node module's output.

    Parameters
    ----------
    logits : Tensor of shape (n, cardinality)
    values : Tensor of shape (n, cardinality, embedding) or None
        One embedding per value, mixed by the fed probabilities into the
        message to the node's children; None where the message is the fed
        probabilities themselves.
    """

    logits: Tensor
    values: Tensor | None


class StackedLinear(NamedTuple):
    """The same linear layer of G nodes, zero-padded to the widest: ``weight`` (G, out, in), ``bias`` (G, out, 1)."""

    weight: Tensor
    bias: Tensor

    def __call__(self, inputs: Tensor) -> Tensor:
        """``weight @ inputs + bias`` for inputs of shape (G, in, n) or (in, n)."""
        return torch.matmul(self.weight, inputs) + self.bias


class StackedOutput(NamedTuple):
    """A group's output: ``logits`` (G, cardinality, n), ``values`` (G, cardinality, embedding, n) or None."""

    logits: Tensor
    values: Tensor | None


class NodeBlock(nn.Module, ABC):
    """A node's module: logits (and maybe value embeddings) from the encoding and its slots."""

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__()
        self.cardinality = spec.cardinality

    @staticmethod
    @abstractmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        """Width of the message the node feeds its children."""

    @abstractmethod
    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        """Predict the node from the encoding and its concatenated slots."""

    @abstractmethod
    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        """Adapt in place to new slots, keeping the weights of the retained ones."""

    @abstractmethod
    def linears(self) -> tuple[nn.Linear, ...]:
        """The module's linear layers, in the order :meth:`stacked_forward` applies them."""

    def padded_rows(self, layer: int, group_width: int, group_cardinality: int) -> tuple[Tensor, int] | None:
        """Where the output rows of linear ``layer`` go when stacked in a group, and the stacked height.

        ``group_width`` and ``group_cardinality`` are the group's widest input and largest
        cardinality. None keeps every row in place, padding at the end (the height is the
        group's largest); a kind whose rows are laid out by its input width says where each goes.
        """
        return None

    @staticmethod
    @abstractmethod
    def stacked_forward(encoding: Tensor, inputs: Tensor, layers: Sequence[StackedLinear]) -> StackedOutput:
        """Logits (and maybe value embeddings) of a group of nodes of this kind, features first.

        Parameters
        ----------
        encoding : Tensor of shape (encoder width, n)
            The encoding, transposed.
        inputs : Tensor of shape (G, widest input, n), or (encoder width, n)
            Each node's concatenated slots, transposed and zero-padded; or, where every
            node reads the encoding alone, the encoding, shared.
        layers : sequence of StackedLinear
            The nodes' :meth:`linears`, stacked and zero-padded.

        Returns
        -------
        StackedOutput
            Logits padded with unmasked rows beyond a node's cardinality.
        """


class MLPHead(NodeBlock):
    """Logits from the slots by a LeakyReLU MLP (a linear layer without hidden widths).

    C2BM roots (one encoding slot, no hidden layer) and the task decoder of
    CBM and CEM (one slot per concept). Its message is the fed probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec, params)
        self.layers = leaky_mlp([spec.width, *spec.hidden, spec.cardinality])

    @override
    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    @override
    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        return NodeOutput(self.layers(inputs), None)

    @override
    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        rewire_inputs(_linear(self.layers, 0), before, after, fill)

    @override
    def linears(self) -> tuple[nn.Linear, ...]:
        return tuple(layer for layer in self.layers if isinstance(layer, nn.Linear))

    @override
    @staticmethod
    def stacked_forward(encoding: Tensor, inputs: Tensor, layers: Sequence[StackedLinear]) -> StackedOutput:
        hidden = inputs
        for layer in layers[:-1]:
            hidden = F.leaky_relu(layer(hidden))
        return StackedOutput(layers[-1](hidden), None)


class EmbeddingHead(NodeBlock):
    """One embedding per value from the slots (linear, LeakyReLU), then a linear scorer over them.

    CEM concepts (one encoding slot) and every CGM node (the encoding for
    roots, the parents' mixed embeddings otherwise). Its message is the value
    embeddings mixed by the fed probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec, params)
        self.embedding_size = params.embedding_size
        values = spec.cardinality * params.embedding_size
        self.values = leaky_mlp([spec.width, values], activate_output=True)
        self.scorer = nn.Linear(values, spec.cardinality)

    @override
    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return params.embedding_size

    @override
    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        values = self.values(inputs)
        return NodeOutput(self.scorer(values), values.view(-1, self.cardinality, self.embedding_size))

    @override
    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        rewire_inputs(_linear(self.values, 0), before, after, fill)

    @override
    def linears(self) -> tuple[nn.Linear, ...]:
        return _linear(self.values, 0), self.scorer

    @override
    @staticmethod
    def stacked_forward(encoding: Tensor, inputs: Tensor, layers: Sequence[StackedLinear]) -> StackedOutput:
        values_layer, scorer = layers
        values = F.leaky_relu(values_layer(inputs))
        logits = scorer(values)
        groups, cardinality, n = logits.shape
        return StackedOutput(logits, values.view(groups, cardinality, -1, n))


class ScoredEmbeddingHead(EmbeddingHead):
    """An :class:`EmbeddingHead` whose message is the fed probabilities.

    CBM concepts, as in the reference code: the same per-value embeddings and
    linear scorer as CEM, but the task decoder reads the concept
    probabilities, not the mixed embeddings.
    """

    @override
    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    @override
    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        return NodeOutput(super().forward(encoding, inputs).logits, None)

    @override
    @staticmethod
    def stacked_forward(encoding: Tensor, inputs: Tensor, layers: Sequence[StackedLinear]) -> StackedOutput:
        return StackedOutput(EmbeddingHead.stacked_forward(encoding, inputs, layers).logits, None)


class WeightGenerator(NodeBlock):
    """C2BM non-root: logits = W(encoding) @ slots, W a (cardinality x slot width) matrix from an MLP.

    The MLP is linear, LeakyReLU, linear with ``decoder_hidden`` hidden
    units; output row ``v * width + j`` is ``W[v, j]``. Its message is the fed
    probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec, params)
        self.generator = leaky_mlp([params.encoder_hidden, params.decoder_hidden, spec.cardinality * spec.width])

    @override
    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    @override
    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        weights = self.generator(encoding).view(len(encoding), self.cardinality, inputs.shape[1])
        return NodeOutput(torch.einsum("nvp,np->nv", weights, inputs), None)

    @override
    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        rewire_grouped_outputs(_linear(self.generator, -1), self.cardinality, before, after, fill)

    @override
    def linears(self) -> tuple[nn.Linear, ...]:
        return _linear(self.generator, 0), _linear(self.generator, -1)

    @override
    def padded_rows(self, layer: int, group_width: int, group_cardinality: int) -> tuple[Tensor, int] | None:
        """Row ``v * width + j`` of the generator's last layer (``W[v, j]``) goes to ``v * group_width + j``."""
        if layer == 0:
            return None
        width = _linear(self.generator, -1).out_features // self.cardinality
        value = torch.arange(self.cardinality).repeat_interleave(width)
        column = torch.arange(width).repeat(self.cardinality)
        return value * group_width + column, group_cardinality * group_width

    @override
    @staticmethod
    def stacked_forward(encoding: Tensor, inputs: Tensor, layers: Sequence[StackedLinear]) -> StackedOutput:
        first, last = layers
        weights = last(F.leaky_relu(first(encoding)))
        groups, width, n = inputs.shape
        weights = weights.view(groups, -1, width, n)
        return StackedOutput((weights * inputs.unsqueeze(1)).sum(dim=2), None)


def _linear(layers: nn.Sequential, index: int) -> nn.Linear:
    """Layer ``index`` of ``layers``, a :func:`leaky_mlp`'s first or (without output activation) last Linear."""
    layer = layers[index]
    if not isinstance(layer, nn.Linear):
        raise TypeError(f"layer {index} is a {type(layer).__name__}, not a Linear")
    return layer
