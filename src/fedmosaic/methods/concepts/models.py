"""The concept-based model families of F-CMs, grown in place as concepts arrive.

Four families predict every node of a :class:`ConceptGraph` (the concepts and
the task) from an input ``x``:

- **CBM** (concept bottleneck): a linear head per concept on the encoding;
  the task decoder reads the concepts' probabilities.
- **CEM** (concept embeddings): per concept, one embedding per value and a
  linear scorer over them; the concept's embedding is the probability-weighted
  mix of its value embeddings, and the task decoder reads those mixes.
- **CGM** (concept graph): like CEM, but every non-root node (the task
  included) reads its parents' mixed embeddings instead of the encoding.
- **C2BM** (causal concept bottleneck): roots are linear heads on the
  encoding; a non-root node's logits are ``W(x) @ p``, with ``W(x)`` a
  (cardinality x summed parent cardinalities) matrix generated from the
  encoding and ``p`` the parents' concatenated probabilities.

Every model is an ``encoder`` (a two-layer LeakyReLU MLP) and one module per
node in the ``nodes`` :class:`~torch.nn.ModuleDict`. A node's module reads
named *slots* (the encoding, or the message of another node) so that growth
is a matter of names: :meth:`ConceptModel.adapt` adds modules for new nodes and,
where a node's slots change, keeps the weights of the slots that remain and
initialises the others (zeros by default, so the old outputs are unchanged).
Everything else keeps its name, shape and value.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, PositiveInt
from torch import Tensor, nn

from fedmosaic.errors import FedmosaicError
from fedmosaic.methods.arrays import seeded
from fedmosaic.seeding import derive_seed

# --------------------------------------------------------------------------- graph


@dataclass(frozen=True)
class ConceptGraph:
    """The concepts a model predicts and the DAG among them.

    Validated and normalised on construction: ``cardinalities`` and
    ``parents`` become dicts over ``nodes`` (in that order; treat them as
    read-only), a node missing from ``parents`` is a root, and each parent
    tuple is sorted in ``nodes`` order.

    Parameters
    ----------
    nodes : tuple of str
        Every node the model predicts, the task included, unique. Their order
        is the column order of ``true_values`` and ``intervene`` in
        :meth:`ConceptModel.forward` and the order in which inputs are
        concatenated; growth maps inputs by name, so it may change between
        graphs (keeping it, with new concepts appended, is cheapest).
    task : str
        The node the model is trained for; one of ``nodes``.
    cardinalities : mapping of str to int
        Number of values of each node, >= 2.
    parents : mapping of str to tuple of str
        Parents of each node within ``nodes``; must be acyclic.

    Raises
    ------
    FedmosaicError
        With a one-line reason naming the offending node.

    Examples
    --------
    >>> g = ConceptGraph(("b", "a", "y"), "y", {"a": 2, "b": 2, "y": 3}, {"y": ("b", "a")})
    >>> g.parents["y"], g.topological_order(), sorted(g.ancestors("y"))
    (('b', 'a'), ('a', 'b', 'y'), ['a', 'b'])
    """

    nodes: tuple[str, ...]
    task: str
    cardinalities: Mapping[str, int]
    parents: Mapping[str, tuple[str, ...]]

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        _check_node_names(nodes)
        if self.task not in nodes:
            raise FedmosaicError(f"concept graph: task {self.task!r} is not one of the nodes {list(nodes)}")
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "cardinalities", _checked_cardinalities(nodes, self.cardinalities))
        object.__setattr__(self, "parents", _checked_parents(nodes, self.parents))
        self.topological_order()  # rejects cycles

    def topological_order(self) -> tuple[str, ...]:
        """The nodes, parents first; among the nodes ready at once, the smallest name first.

        Raises
        ------
        FedmosaicError
            If the parents form a cycle.
        """
        waiting = {node: len(parents) for node, parents in self.parents.items()}
        children: dict[str, list[str]] = {node: [] for node in self.nodes}
        for node, parents in self.parents.items():
            for parent in parents:
                children[parent].append(node)
        ready = [node for node, count in waiting.items() if count == 0]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            node = heapq.heappop(ready)
            order.append(node)
            for child in children[node]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, child)
        if len(order) < len(self.nodes):
            stuck = sorted(set(self.nodes) - set(order))
            raise FedmosaicError(f"concept graph: the parents form a cycle through {stuck}")
        return tuple(order)

    def ancestors(self, node: str) -> frozenset[str]:
        """The nodes with a directed path to ``node`` (``node`` itself excluded)."""
        seen: set[str] = set()
        stack = list(self.parents[node])
        while stack:
            parent = stack.pop()
            if parent not in seen:
                seen.add(parent)
                stack.extend(self.parents[parent])
        return frozenset(seen)


def _check_node_names(nodes: tuple[str, ...]) -> None:
    """Reject node names that are not strings or that repeat."""
    seen: set[str] = set()
    for name in nodes:
        if not isinstance(name, str):
            raise FedmosaicError(f"concept graph: node names must be strings (got {name!r})")
        if name in seen:
            raise FedmosaicError(f"concept graph: duplicate node {name!r}")
        seen.add(name)


def _checked_cardinalities(nodes: tuple[str, ...], cardinalities: Mapping[str, int]) -> dict[str, int]:
    """``cardinalities`` over ``nodes``, each an int >= 2."""
    unknown = sorted(set(cardinalities) - set(nodes))
    if unknown:
        raise FedmosaicError(f"concept graph: cardinalities of unknown nodes {unknown}")
    checked: dict[str, int] = {}
    for node in nodes:
        card = cardinalities.get(node)
        if isinstance(card, bool) or not isinstance(card, int) or card < 2:
            raise FedmosaicError(f"concept graph: cardinality of {node!r} must be an int >= 2 (got {card!r})")
        checked[node] = card
    return checked


def _checked_parents(nodes: tuple[str, ...], parents: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """``parents`` over ``nodes`` (roots for missing ones), each sorted in ``nodes`` order."""
    position = {node: k for k, node in enumerate(nodes)}
    unknown = sorted(set(parents) - set(nodes))
    if unknown:
        raise FedmosaicError(f"concept graph: parents given for unknown nodes {unknown}")
    checked: dict[str, tuple[str, ...]] = {}
    for node in nodes:
        given = tuple(parents.get(node, ()))
        outside = [parent for parent in given if parent not in position]
        if outside:
            raise FedmosaicError(f"concept graph: parents of {node!r} are not nodes: {outside}")
        if node in given:
            raise FedmosaicError(f"concept graph: {node!r} is its own parent")
        if len(set(given)) < len(given):
            raise FedmosaicError(f"concept graph: parents of {node!r} repeat: {list(given)}")
        checked[node] = tuple(sorted(given, key=position.__getitem__))
    return checked


# --------------------------------------------------------------------------- parameters


class ConceptModelParams(BaseModel):
    """Describes a concept-based model.

    Parameters
    ----------
    family : {"cbm", "cem", "cgm", "c2bm"}, default "cbm"
        ``cbm``: concept bottleneck; ``cem``: concept embeddings; ``cgm``:
        concept graph over embeddings; ``c2bm``: causal concept bottleneck
        (input-dependent linear equations over the parents' probabilities).
    decoder : {"linear", "mlp"}, default "mlp"
        Task decoder of ``cbm`` and ``cem``: one linear layer, or linear,
        LeakyReLU, linear.
    encoder_hidden : int, default 64
        Width of both layers of the LeakyReLU MLP encoder.
    embedding_size : int, default 8
        Size of each value embedding (``cem`` and ``cgm``; ``cbm`` and
        ``c2bm`` pass probabilities and have no embeddings).
    decoder_hidden : int, default 32
        Hidden width of the MLP task decoder and of the C2BM weight
        generators; fixed for a model's life so that growth never reshapes
        existing hidden layers.
    init : {"zero", "orthogonal"}, default "zero"
        Initialisation of the weights of connections created by growth.
        ``zero`` leaves the outputs for the old inputs unchanged.

    Examples
    --------
    >>> ConceptModelParams(family="cem", embedding_size=4).decoder
    'mlp'
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    family: Literal["cbm", "cem", "cgm", "c2bm"] = "cbm"
    decoder: Literal["linear", "mlp"] = "mlp"
    encoder_hidden: PositiveInt = 64
    embedding_size: PositiveInt = 8
    decoder_hidden: PositiveInt = 32
    init: Literal["zero", "orthogonal"] = "zero"


# --------------------------------------------------------------------------- slots and growth of layers


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


def _new_weights(init: Literal["zero", "orthogonal"], seed: int) -> Fill:
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


def _rewire_inputs(linear: nn.Linear, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
    """Lay the input columns of ``linear`` out by ``after``; the bias is untouched."""
    width = sum(slot.width for slot in after)
    fresh = fill((linear.out_features, width))
    _replace(linear, "weight", _carry_over(linear.weight.detach(), fresh, 1, before, after))
    linear.in_features = width


def _rewire_grouped_outputs(
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


def _leaky_mlp(widths: Sequence[int], *, activate_output: bool = False) -> nn.Sequential:
    """Linear layers through ``widths`` with LeakyReLU between them (and after the last one if asked)."""
    layers: list[nn.Module] = []
    for k, (inputs, outputs) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(inputs, outputs))
        if activate_output or k < len(widths) - 2:
            layers.append(nn.LeakyReLU())
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- node blocks


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


class NodeBlock(nn.Module, ABC):
    """A node's module: logits (and maybe value embeddings) from the encoding and its slots."""

    def __init__(self, spec: NodeSpec) -> None:
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


class MLPHead(NodeBlock):
    """Logits from the slots by a LeakyReLU MLP (a linear layer without hidden widths).

    C2BM roots (one encoding slot, no hidden layer) and the task decoder of
    CBM and CEM (one slot per concept). Its message is the fed probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec)
        self.layers = _leaky_mlp([spec.width, *spec.hidden, spec.cardinality])

    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        return NodeOutput(self.layers(inputs), None)

    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        _rewire_inputs(self.layers[0], before, after, fill)


class EmbeddingHead(NodeBlock):
    """One embedding per value from the slots (linear, LeakyReLU), then a linear scorer over them.

    CEM concepts (one encoding slot) and every CGM node (the encoding for
    roots, the parents' mixed embeddings otherwise). Its message is the value
    embeddings mixed by the fed probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec)
        self.embedding_size = params.embedding_size
        values = spec.cardinality * params.embedding_size
        self.values = _leaky_mlp([spec.width, values], activate_output=True)
        self.scorer = nn.Linear(values, spec.cardinality)

    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return params.embedding_size

    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        values = self.values(inputs)
        return NodeOutput(self.scorer(values), values.view(-1, self.cardinality, self.embedding_size))

    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        _rewire_inputs(self.values[0], before, after, fill)


class ScoredEmbeddingHead(EmbeddingHead):
    """An :class:`EmbeddingHead` whose message is the fed probabilities.

    CBM concepts, as in the reference code: the same per-value embeddings and
    linear scorer as CEM, but the task decoder reads the concept
    probabilities, not the mixed embeddings.
    """

    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        return NodeOutput(super().forward(encoding, inputs).logits, None)


class WeightGenerator(NodeBlock):
    """C2BM non-root: logits = W(encoding) @ slots, W a (cardinality x slot width) matrix from an MLP.

    The MLP is linear, LeakyReLU, linear with ``decoder_hidden`` hidden
    units; output row ``v * width + j`` is ``W[v, j]``. Its message is the fed
    probabilities.
    """

    def __init__(self, spec: NodeSpec, params: ConceptModelParams) -> None:
        super().__init__(spec)
        self.generator = _leaky_mlp([params.encoder_hidden, params.decoder_hidden, spec.cardinality * spec.width])

    @staticmethod
    def message_width(cardinality: int, params: ConceptModelParams) -> int:
        return cardinality

    def forward(self, encoding: Tensor, inputs: Tensor) -> NodeOutput:
        weights = self.generator(encoding).view(len(encoding), self.cardinality, inputs.shape[1])
        return NodeOutput(torch.einsum("nvp,np->nv", weights, inputs), None)

    def rewire(self, before: Sequence[Slot], after: Sequence[Slot], fill: Fill) -> None:
        _rewire_grouped_outputs(self.generator[-1], self.cardinality, before, after, fill)


# --------------------------------------------------------------------------- families


class _Family(ABC):
    """Which module each node of a graph gets in one model family."""

    def __init__(self, params: ConceptModelParams) -> None:
        self.params = params

    @abstractmethod
    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        """The module class of ``node``."""

    @abstractmethod
    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        """The module of ``node``."""

    def encoding_slots(self) -> tuple[Slot]:
        """The slots of a node read from the encoding alone."""
        return (Slot(None, self.params.encoder_hidden),)

    def input_slots(self, sources: Iterable[str], graph: ConceptGraph) -> tuple[Slot, ...]:
        """One slot per source node, as wide as its message."""
        return tuple(
            Slot(source, self.block(source, graph).message_width(graph.cardinalities[source], self.params))
            for source in sources
        )


class _Bottleneck(_Family):
    """CBM and CEM: concepts from the encoding, the task decoded from every concept."""

    concept_block: ClassVar[type[NodeBlock]]

    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        return MLPHead if node == graph.task else self.concept_block

    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        card = graph.cardinalities[node]
        if node != graph.task:
            return NodeSpec(self.concept_block, card, self.encoding_slots())
        concepts = [concept for concept in graph.nodes if concept != graph.task]
        hidden = (self.params.decoder_hidden,) if self.params.decoder == "mlp" else ()
        return NodeSpec(MLPHead, card, self.input_slots(concepts, graph), hidden)


class _CBM(_Bottleneck):
    concept_block = ScoredEmbeddingHead


class _CEM(_Bottleneck):
    concept_block = EmbeddingHead


class _Causal(_Family):
    """CGM and C2BM: roots from the encoding, every other node from its parents."""

    root_block: ClassVar[type[NodeBlock]]
    child_block: ClassVar[type[NodeBlock]]

    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        return self.child_block if graph.parents[node] else self.root_block

    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        parents = graph.parents[node]
        slots = self.input_slots(parents, graph) if parents else self.encoding_slots()
        return NodeSpec(self.block(node, graph), graph.cardinalities[node], slots)


class _CGM(_Causal):
    root_block = EmbeddingHead
    child_block = EmbeddingHead


class _C2BM(_Causal):
    root_block = MLPHead
    child_block = WeightGenerator


_FAMILIES: dict[str, type[_Family]] = {"cbm": _CBM, "cem": _CEM, "cgm": _CGM, "c2bm": _C2BM}


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class AdaptationReport:
    """What :meth:`ConceptModel.adapt` changed.

    Parameters
    ----------
    added_nodes : tuple of str
        Nodes that got a new module, in the new graph's order.
    rewired_nodes : tuple of str
        Existing nodes whose inputs changed, in the new graph's order.
    params_before, params_after : int
        Number of parameter elements before and after.
    params_changed : int
        Elements of the parameter tensors that are new or were reshaped or
        rewired (counted whole).
    """

    added_nodes: tuple[str, ...]
    rewired_nodes: tuple[str, ...]
    params_before: int
    params_after: int
    params_changed: int

    @property
    def change_ratio(self) -> float:
        """``params_changed / params_before`` (0 when nothing changed)."""
        return self.params_changed / self.params_before if self.params_changed else 0.0

    @property
    def growth_ratio(self) -> float:
        """``max(0, params_after - params_before) / params_before``: the F-CMs paper's parameter change ratio."""
        return max(0, self.params_after - self.params_before) / self.params_before if self.params_before else 0.0


def _node_key(node: str) -> str:
    """The ``nodes`` key of a node: injective, free of ".", never an attribute of ModuleDict."""
    return "n_" + node.replace("%", "%25").replace(".", "%2E")


class ConceptModel(nn.Module):
    """A concept-based model of the family ``params.family`` that grows in place.

    Parameters
    ----------
    input_dim : int
        Number of input features.
    graph : ConceptGraph
        The nodes to predict and, for ``cgm`` and ``c2bm``, their DAG.
    params : ConceptModelParams
        Architecture.
    seed : int
        Seeds the encoder and each node's module (by the node's name), so a
        node's initial weights do not depend on when it arrived.

    Attributes
    ----------
    encoder : torch.nn.Sequential
        ``input_dim -> encoder_hidden -> encoder_hidden``, LeakyReLU after each.
    nodes : torch.nn.ModuleDict
        One module per node, under the key in :meth:`node_prefix`.
    graph : ConceptGraph
        The current graph.

    Examples
    --------
    >>> graph = ConceptGraph(("a", "y"), "y", {"a": 2, "y": 3}, {"y": ("a",)})
    >>> model = ConceptModel(4, graph, ConceptModelParams(family="cgm"), seed=0)
    >>> {node: tuple(logits.shape) for node, logits in model(torch.zeros(5, 4)).items()}
    {'a': (5, 2), 'y': (5, 3)}
    >>> bigger = ConceptGraph(("a", "b", "y"), "y", {"a": 2, "b": 2, "y": 3}, {"y": ("a", "b")})
    >>> report = model.adapt(bigger)
    >>> report.added_nodes, report.rewired_nodes
    (('b',), ('y',))
    """

    ENCODER_PREFIX: ClassVar[str] = "encoder."

    def __init__(self, input_dim: int, graph: ConceptGraph, params: ConceptModelParams, *, seed: int) -> None:
        super().__init__()
        if not isinstance(params, ConceptModelParams):
            raise TypeError(f"params must be ConceptModelParams (got {type(params).__name__})")
        if not isinstance(graph, ConceptGraph):
            raise TypeError(f"graph must be a ConceptGraph (got {type(graph).__name__})")
        if isinstance(input_dim, bool) or not isinstance(input_dim, int) or input_dim < 1:
            raise ValueError(f"input_dim must be an int >= 1 (got {input_dim!r})")
        self.params = params
        self.seed = seed
        self._family = _FAMILIES[params.family](params)
        hidden = params.encoder_hidden
        self.encoder = seeded(
            derive_seed(seed, "encoder"), lambda: _leaky_mlp([input_dim, hidden, hidden], activate_output=True)
        )
        self.nodes = nn.ModuleDict()
        self._specs: dict[str, NodeSpec] = {}
        for node in graph.nodes:
            self._install(node, self._family.spec(node, graph))
        self._set_graph(graph)

    def node_prefix(self, node: str) -> str:
        """Prefix of the names of ``node``'s parameters, e.g. ``"nodes.n_dysp."``.

        A pure function of the name: it holds for the node's whole life,
        including before it joins the model.
        """
        return f"nodes.{_node_key(node)}."

    def dependencies(self, nodes: Iterable[str]) -> frozenset[str]:
        """The nodes whose modules the forward pass of ``nodes`` needs, themselves included.

        The encoder is always needed as well. A CBM or CEM task needs every
        concept; a CGM or C2BM node needs its ancestors.
        """
        needed: set[str] = set()
        for node in nodes:
            if node not in self._specs:
                raise KeyError(f"{node!r} is not a node of the model")
            needed |= {node} | self._computation.ancestors(node)
        return frozenset(needed)

    def forward(
        self, x: Tensor, *, true_values: Tensor | None = None, intervene: Tensor | None = None
    ) -> dict[str, Tensor]:
        """Logits of every node of the graph.

        Parameters
        ----------
        x : Tensor of shape (n, input_dim)
        true_values : integer Tensor of shape (n, len(graph.nodes)), optional
            True value of each node, columns in ``graph.nodes`` order, -1
            where unknown.
        intervene : bool Tensor of shape (n, len(graph.nodes)), optional
            Where True and the true value is known, the node feeds its
            descendants the one-hot true value instead of its predicted
            probabilities. Needs ``true_values``.

        Returns
        -------
        dict of str to Tensor of shape (n, cardinality)
            The model's own logits for each node (also where intervened), in
            ``graph.nodes`` order.
        """
        column = {node: k for k, node in enumerate(self.graph.nodes)}
        truth, mask = self._interventions(len(x), true_values, intervene)
        encoding = self.encoder(x)
        messages: dict[str, Tensor] = {}
        logits: dict[str, Tensor] = {}
        for node in self._order:
            slots = self._specs[node].slots
            parts = [encoding if slot.source is None else messages[slot.source] for slot in slots]
            inputs = torch.cat(parts, dim=1) if parts else encoding.new_zeros(len(x), 0)
            output = self.nodes[_node_key(node)](encoding, inputs)
            fed = torch.softmax(output.logits, dim=1)
            if mask is not None:
                k = column[node]
                true_one_hot = F.one_hot(truth[:, k], output.logits.shape[1]).to(fed)
                fed = torch.where(mask[:, k, None], true_one_hot, fed)
            messages[node] = fed if output.values is None else torch.einsum("nv,nve->ne", fed, output.values)
            logits[node] = output.logits
        return {node: logits[node] for node in self.graph.nodes}

    def adapt(self, graph: ConceptGraph) -> AdaptationReport:
        """Grow or rewire the model in place to ``graph``.

        New nodes get new modules (seeded by the model's seed and the node's
        name). A node whose inputs change (a CBM/CEM task decoder when
        concepts arrive, a CGM/C2BM node whose parents change) keeps the
        weights of the inputs it still has and initialises the new ones as
        ``params.init`` says. A CGM root that gains parents trades its
        encoding input for them, so its whole first layer is new; a C2BM node
        that turns from root to non-root (or back) gets a new module, with new
        parameter names under the same :meth:`node_prefix`. Every other
        parameter, and the encoder, keeps its name, shape and value.

        Parameters
        ----------
        graph : ConceptGraph
            Must keep every current node, with its cardinality, and the task.

        Returns
        -------
        AdaptationReport

        Raises
        ------
        FedmosaicError
            If ``graph`` drops a node or changes the task or a cardinality.
        """
        self._check_growth(graph)
        before = dict(self.named_parameters())
        added: list[str] = []
        rewired: list[str] = []
        for node in graph.nodes:
            spec, old = self._family.spec(node, graph), self._specs.get(node)
            if old is None:
                added.append(node)
                self._install(node, spec)
            elif old != spec:
                rewired.append(node)
                if old.rewirable_to(spec):
                    fill = _new_weights(self.params.init, derive_seed(self.seed, "rewire", node, *graph.nodes))
                    self.nodes[_node_key(node)].rewire(old.slots, spec.slots, fill)
                    self._specs[node] = spec
                else:
                    self._install(node, spec)
        self._set_graph(graph)
        after = dict(self.named_parameters())
        return AdaptationReport(
            added_nodes=tuple(added),
            rewired_nodes=tuple(rewired),
            params_before=sum(p.numel() for p in before.values()),
            params_after=sum(p.numel() for p in after.values()),
            params_changed=sum(p.numel() for name, p in after.items() if before.get(name) is not p),
        )

    def _install(self, node: str, spec: NodeSpec) -> None:
        """Give ``node`` a new module built from ``spec``, on the encoder's device and dtype."""
        module = seeded(derive_seed(self.seed, "node", node), lambda: spec.block(spec, self.params))
        self.nodes[_node_key(node)] = module.to(self.encoder[0].weight)
        self._specs[node] = spec

    def _set_graph(self, graph: ConceptGraph) -> None:
        """Make ``graph`` current, with the order in which the nodes are evaluated."""
        self.graph = graph
        sources = {node: self._specs[node].sources for node in graph.nodes}
        self._computation = ConceptGraph(graph.nodes, graph.task, graph.cardinalities, sources)
        self._order = self._computation.topological_order()

    def _check_growth(self, graph: ConceptGraph) -> None:
        """Reject a graph that is not a growth of the current one."""
        if not isinstance(graph, ConceptGraph):
            raise TypeError(f"graph must be a ConceptGraph (got {type(graph).__name__})")
        if graph.task != self.graph.task:
            raise FedmosaicError(f"adapt: the task cannot change ({self.graph.task!r} -> {graph.task!r})")
        dropped = [node for node in self.graph.nodes if node not in graph.cardinalities]
        if dropped:
            raise FedmosaicError(f"adapt: nodes cannot be removed (missing {dropped})")
        for node in self.graph.nodes:
            old, new = self.graph.cardinalities[node], graph.cardinalities[node]
            if old != new:
                raise FedmosaicError(f"adapt: cardinality of {node!r} cannot change ({old} -> {new})")

    def _interventions(
        self, n: int, true_values: Tensor | None, intervene: Tensor | None
    ) -> tuple[Tensor | None, Tensor | None]:
        """The true values (unknown ones as 0) and where to feed them, or (None, None)."""
        if intervene is None:
            return None, None
        if true_values is None:
            raise ValueError("intervene needs true_values")
        shape = (n, len(self.graph.nodes))
        for name, tensor in (("true_values", true_values), ("intervene", intervene)):
            if tuple(tensor.shape) != shape:
                raise ValueError(f"{name} must have shape {shape} (got {tuple(tensor.shape)})")
        cards = torch.tensor([self.graph.cardinalities[node] for node in self.graph.nodes], device=true_values.device)
        if (true_values >= cards).any():
            raise ValueError("true_values: a value is >= its node's cardinality")
        known = true_values >= 0
        return true_values.long().clamp(min=0), intervene.bool() & known


def build_concept_model(input_dim: int, graph: ConceptGraph, params: ConceptModelParams, *, seed: int) -> ConceptModel:
    """Build the concept-based model of family ``params.family``.

    Parameters
    ----------
    input_dim : int
        Number of input features.
    graph : ConceptGraph
        The nodes to predict and their DAG.
    params : ConceptModelParams
        Architecture; ``params.family`` picks the family.
    seed : int
        Seeds every initial weight.

    Examples
    --------
    >>> graph = ConceptGraph(("a", "y"), "y", {"a": 2, "y": 2}, {})
    >>> model = build_concept_model(3, graph, ConceptModelParams(decoder="linear"), seed=1)
    >>> sorted(name for name, _ in model.named_parameters() if name.startswith(model.node_prefix("y")))
    ['nodes.n_y.layers.0.bias', 'nodes.n_y.layers.0.weight']
    """
    return ConceptModel(input_dim, graph, params, seed=seed)
