"""A concept model's nodes evaluated a graph level at a time: one stacked computation per group of nodes.

A node's module reads the encoding and its sources' messages, so the nodes of one topological
level can be computed together. :class:`LevelPlan` groups each level's nodes by module kind and
cardinality and, per group, stacks the nodes' own linear layers into ``(G, out, in)`` weights,
zero-padded to the group's widest input (one gather from the concatenated parameters, so
gradients reach each node's parameters under its own name); gathers the nodes' inputs from the
encoding and their sources' messages with one index (a group of nodes that read the encoding
alone shares it, ungathered); and evaluates the kind's
:meth:`~fedmosaic.methods.concepts.blocks.NodeBlock.stacked_forward`. Tensors are laid out
features first, ``(G, features, n)``, so a layer is one batched matrix product.

Cardinalities are not padded: on hailfinder, padding them to the largest of a level made the
products several times larger than the nodes' own. Interventions (the true value fed downstream
instead of the prediction) are applied per group as in the node-by-node evaluation, which
:class:`~fedmosaic.methods.concepts.models.ConceptModel` keeps for DP-SGD (Opacus records
per-example gradients on each node's own layers as they are called).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedmosaic.methods.concepts.blocks import NodeBlock, NodeSpec, StackedLinear

Interventions = tuple[Tensor, Tensor]
"""True values with unknown ones as 0, and where to feed them (bool), both (nodes, n)."""

Messages = dict[str | None, Tensor]
"""What each computed node feeds its readers, (message width, n), and under None the encoding, (width, n)."""


@dataclass(frozen=True)
class _StackedLayer:
    """One linear layer of a group's nodes and where each of their elements goes when stacked."""

    linears: tuple[nn.Linear, ...]
    weight_index: Tensor  # (G, out, in) into the concatenated weights, whose last element is a zero
    bias_index: Tensor  # (G, out, 1) into the concatenated biases, likewise

    def stacked(self) -> StackedLinear:
        """The zero-padded ``(G, out, in)`` weight and ``(G, out, 1)`` bias.

        The layers' parameters are read now, so that :func:`torch.func.functional_call` can substitute them.
        """
        weights = [linear.weight for linear in self.linears]
        biases = [linear.bias for linear in self.linears]
        return StackedLinear(_gather(weights, self.weight_index), _gather(biases, self.bias_index))


def _gather(parameters: Sequence[Tensor], index: Tensor) -> Tensor:
    """``index`` into the parameters' elements in turn, followed by one zero."""
    flat = torch.cat([*(p.reshape(-1) for p in parameters), parameters[0].new_zeros(1)])
    return flat[index]


def _stacked_layer(
    linears: Sequence[nn.Linear], placements: Sequence[tuple[Tensor, int] | None], device: torch.device
) -> _StackedLayer:
    """The gather indices that stack ``linears`` (one per node), rows placed as ``placements`` say."""
    rows = [torch.arange(lin.out_features) if p is None else p[0] for lin, p in zip(linears, placements, strict=True)]
    height = max(lin.out_features if p is None else p[1] for lin, p in zip(linears, placements, strict=True))
    width = max(lin.in_features for lin in linears)
    weight_count = sum(lin.weight.numel() for lin in linears)
    bias_count = sum(lin.out_features for lin in linears)
    weight_index = torch.full((len(linears), height, width), weight_count, dtype=torch.long)
    bias_index = torch.full((len(linears), height, 1), bias_count, dtype=torch.long)
    weight_start = bias_start = 0
    for g, (lin, placed) in enumerate(zip(linears, rows, strict=True)):
        out, inputs = lin.out_features, lin.in_features
        weight_index[g, placed, :inputs] = weight_start + torch.arange(out * inputs).view(out, inputs)
        bias_index[g, placed, 0] = bias_start + torch.arange(out)
        weight_start, bias_start = weight_start + out * inputs, bias_start + out
    return _StackedLayer(
        linears=tuple(linears),
        weight_index=weight_index.to(device),
        bias_index=bias_index.to(device),
    )


@dataclass(frozen=True)
class _Group:
    """Nodes of one level, one module kind and one cardinality, computed together."""

    nodes: tuple[str, ...]
    kind: type[NodeBlock]
    columns: Tensor  # (G,) the nodes' columns in the graph's node order
    sources: tuple[str | None, ...]  # the messages the nodes read (None: the encoding)
    input_index: (
        Tensor | None
    )  # (G * width,) rows of [zero row, *sources' messages] as the nodes' inputs; None: the encoding
    width: int
    layers: tuple[_StackedLayer, ...]

    def run(self, messages: Messages, interventions: Interventions | None) -> Tensor:
        """Compute the group from ``messages`` and add its own there; its logits (G, cardinality, n)."""
        encoding = messages[None]
        inputs = encoding if self.input_index is None else self._gather(messages)
        output = self.kind.stacked_forward(encoding, inputs, [layer.stacked() for layer in self.layers])
        fed = torch.softmax(output.logits, dim=1)
        if interventions is not None:
            truth, mask = (tensor.index_select(0, self.columns) for tensor in interventions)
            one_hot = F.one_hot(truth, output.logits.shape[1]).transpose(1, 2).to(fed)
            fed = torch.where(mask.unsqueeze(1), one_hot, fed)
        message = fed if output.values is None else (fed.unsqueeze(2) * output.values).sum(dim=1)
        messages.update(zip(self.nodes, message.unbind(0), strict=True))
        return output.logits

    def _gather(self, messages: Messages) -> Tensor:
        """The nodes' inputs (G, width, n) from their sources' messages."""
        assert self.input_index is not None  # only groups that do not read the encoding alone gather
        n = messages[None].shape[1]
        available = torch.cat([messages[None].new_zeros(1, n), *(messages[source] for source in self.sources)])
        return available.index_select(0, self.input_index).view(len(self.nodes), self.width, n)


class LevelPlan:
    """The groups that compute ``nodes`` level by level.

    Parameters
    ----------
    nodes : sequence of str
        The nodes to compute, sources before their readers. Sources outside ``nodes`` are
        read from the messages given to :meth:`run`.
    specs : mapping of str to NodeSpec
        Every node's spec.
    blocks : mapping of str to NodeBlock
        Every node's module.
    columns : mapping of str to int
        Every node's column in the graph's node order (interventions).
    device : torch.device
        Where the plan's index tensors live.
    """

    def __init__(
        self,
        nodes: Sequence[str],
        specs: Mapping[str, NodeSpec],
        blocks: Mapping[str, NodeBlock],
        columns: Mapping[str, int],
        device: torch.device,
    ) -> None:
        self.device = device
        level: dict[str, int] = {}
        for node in nodes:
            level[node] = 1 + max((level[s] for s in specs[node].sources if s in level), default=-1)
        key = {node: (level[node], type(blocks[node]).__name__, specs[node].cardinality) for node in nodes}
        self.groups = tuple(
            _group(tuple(n for n in nodes if key[n] == group), specs, blocks, columns, device)
            for group in sorted(set(key.values()))
        )

    def run(self, messages: Messages, interventions: Interventions | None) -> list[tuple[tuple[str, ...], Tensor]]:
        """Compute every group in turn into ``messages``; each group's nodes and logits (G, cardinality, n).

        ``messages`` holds the encoding under None and the messages of the sources outside the
        plan's nodes; ``interventions`` are as :data:`Interventions` says, or None.
        """
        return [(group.nodes, group.run(messages, interventions)) for group in self.groups]


def _group(
    nodes: tuple[str, ...],
    specs: Mapping[str, NodeSpec],
    blocks: Mapping[str, NodeBlock],
    columns: Mapping[str, int],
    device: torch.device,
) -> _Group:
    """The stacked form of ``nodes``, all of one level, kind and cardinality."""
    members = [blocks[node] for node in nodes]
    slots = [slot for node in nodes for slot in specs[node].slots]
    sources = tuple(dict.fromkeys(slot.source for slot in slots))
    widths = {slot.source: slot.width for slot in slots}
    start = {source: 1 + sum(widths[s] for s in sources[:k]) for k, source in enumerate(sources)}
    width = max(specs[node].width for node in nodes)
    input_index = torch.zeros(len(nodes), width, dtype=torch.long)  # 0: the zero row
    for g, node in enumerate(nodes):
        rows = [start[slot.source] + r for slot in specs[node].slots for r in range(slot.width)]
        input_index[g, : len(rows)] = torch.tensor(rows, dtype=torch.long)
    cardinality = specs[nodes[0]].cardinality
    layers = tuple(
        _stacked_layer(
            [block.linears()[k] for block in members],
            [block.padded_rows(k, width, cardinality) for block in members],
            device,
        )
        for k in range(len(members[0].linears()))
    )
    return _Group(
        nodes=nodes,
        kind=type(members[0]),
        columns=torch.tensor([columns[node] for node in nodes], dtype=torch.long, device=device),
        sources=sources,
        input_index=None
        if slots == [slots[0]] * len(nodes) and slots[0].source is None
        else input_index.view(-1).to(device),
        width=width,
        layers=layers,
    )
