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

The parts live beside this module, one job each: the graph
(:mod:`~fedmosaic.methods.concepts.concept_graph`), the parameters
(:mod:`~fedmosaic.methods.concepts.model_params`), slots and the growth of
layers (:mod:`~fedmosaic.methods.concepts.slots`), the node blocks
(:mod:`~fedmosaic.methods.concepts.blocks`) and the families
(:mod:`~fedmosaic.methods.concepts.families`); this module assembles them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedmosaic.errors import FedmosaicError
from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.concepts.blocks import NodeBlock, NodeSpec
from fedmosaic.methods.concepts.concept_graph import ConceptGraph
from fedmosaic.methods.concepts.families import FAMILIES
from fedmosaic.methods.concepts.levels import Interventions, LevelPlan, Messages
from fedmosaic.methods.concepts.model_params import ConceptModelParams
from fedmosaic.methods.concepts.slots import new_weights
from fedmosaic.seeding import derive_seed

__all__ = ["AdaptationReport", "ConceptGraph", "ConceptModel", "ConceptModelParams", "build_concept_model"]


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
    per_node : bool
        Evaluate the nodes one module call at a time instead of a graph level at a time
        (:mod:`~fedmosaic.methods.concepts.levels`); False by default. The two agree up to
        float rounding; DP-SGD needs ``True``, since Opacus records per-example gradients
        on each node's own layers as they are called.

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
        self._family = FAMILIES[params.family](params)
        self.encoder = seeded(derive_seed(seed, "encoder"), lambda: params.build_encoder(input_dim))
        self.nodes = nn.ModuleDict()
        self.per_node = False
        self._specs: dict[str, NodeSpec] = {}
        self._plans: dict[tuple[str, ...], LevelPlan] = {}
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
        interventions = self._interventions(len(x), true_values, intervene)
        logits = {}
        for nodes, stacked in self._stacked_logits(x, interventions):
            for g, node in enumerate(nodes):
                logits[node] = stacked[g, : self.graph.cardinalities[node]].t()
        return {node: logits[node] for node in self.graph.nodes}

    def cross_entropies(
        self, x: Tensor, true_values: Tensor, *, intervene: Tensor | None = None, check: bool = True
    ) -> tuple[tuple[str, ...], Tensor, Tensor]:
        """Each node's summed cross-entropy over the rows that know its value, and how many rows do.

        Parameters
        ----------
        x : Tensor of shape (n, input_dim)
        true_values : integer Tensor of shape (n, len(graph.nodes))
            The targets, -1 where unknown (such rows do not count); also the values fed
            where ``intervene`` says, as for :meth:`forward`.
        intervene : bool Tensor of shape (n, len(graph.nodes)), optional
        check : bool, default True
            Check that no true value reaches its node's cardinality; pass False for
            values checked beforehand (under :func:`torch.func.vmap`, which cannot
            branch on a tensor's values).

        Returns
        -------
        nodes : tuple of str
            Every node, in the order of the two tensors.
        sums : Tensor of shape (len(nodes),)
        counts : integer Tensor of shape (len(nodes),)

        Examples
        --------
        >>> graph = ConceptGraph(("a", "y"), "y", {"a": 2, "y": 3}, {"y": ("a",)})
        >>> model = ConceptModel(4, graph, ConceptModelParams(family="c2bm"), seed=0)
        >>> nodes, sums, counts = model.cross_entropies(torch.zeros(3, 4), torch.tensor([[0, 2], [1, -1], [-1, -1]]))
        >>> nodes, counts.tolist()
        (('a', 'y'), [2, 1])
        """
        interventions = self._interventions(len(x), true_values, intervene, check=check)
        targets = true_values.t().long()
        names: list[str] = []
        sums, counts = [], []
        for nodes, stacked in self._stacked_logits(x, interventions):
            target = targets.index_select(0, self._columns_of(nodes).to(targets.device))
            losses = F.cross_entropy(stacked.permute(2, 1, 0), target.t(), ignore_index=-1, reduction="none")
            names += nodes
            sums.append(losses.sum(dim=0))
            counts.append((target >= 0).sum(dim=1))
        return tuple(names), torch.cat(sums), torch.cat(counts)

    def _stacked_logits(self, x: Tensor, interventions: Interventions | None) -> list[tuple[tuple[str, ...], Tensor]]:
        """Groups of nodes and their logits (G, cardinality, n); one node a group if ``per_node``."""
        encoding = self.encoder(x)
        if self.per_node:
            logits, _ = self._evaluate(self._order, encoding, interventions, {}, {})
            return [((node,), logits[node].t().unsqueeze(0)) for node in self._order]
        transposed = None if interventions is None else (interventions[0].t(), interventions[1].t())
        return self._plan(self._order, encoding.device).run({None: encoding.t()}, transposed)

    def _plan(self, nodes: tuple[str, ...], device: torch.device) -> LevelPlan:
        """The level plan that computes ``nodes`` (kept until the graph changes)."""
        plan = self._plans.get(nodes)
        if plan is None or plan.device != device:
            blocks = {node: self._block(node) for node in self.graph.nodes}
            plan = LevelPlan(nodes, self._specs, blocks, self._column, device)
            self._plans[nodes] = plan
        return plan

    def _columns_of(self, nodes: Sequence[str]) -> Tensor:
        return torch.tensor([self._column[node] for node in nodes], dtype=torch.long)

    @torch.no_grad()
    def intervention_sweep(self, x: Tensor, true_values: Tensor, order: Sequence[str]) -> list[Tensor]:
        """The task's logits as the first 0, 1, ..., all nodes of ``order`` are intervened on.

        Each step intervenes one more node and recomputes only that node and its descendants, the
        other nodes' outputs being unchanged: point ``k`` equals ``forward`` with the first ``k``
        nodes of ``order`` intervened, at a fraction of ``len(order) + 1`` forward passes.

        Parameters
        ----------
        x : Tensor of shape (n, input_dim)
        true_values : integer Tensor of shape (n, len(graph.nodes))
            As for :meth:`forward`.
        order : sequence of str
            Nodes of the graph.

        Returns
        -------
        list of Tensor of shape (n, task cardinality)
            ``len(order) + 1`` task logits.

        Examples
        --------
        >>> graph = ConceptGraph(("a", "b", "y"), "y", {"a": 2, "b": 2, "y": 3}, {"b": ("a",), "y": ("b",)})
        >>> model = ConceptModel(4, graph, ConceptModelParams(family="cgm"), seed=0)
        >>> x, truth = torch.randn(6, 4), torch.ones(6, 3, dtype=torch.long)
        >>> sweep = model.intervention_sweep(x, truth, ["b", "a"])
        >>> mask = torch.tensor([False, True, False]).expand(6, 3)
        >>> torch.allclose(sweep[1], model(x, true_values=truth, intervene=mask)["y"], atol=1e-6)
        True
        """
        unknown = [node for node in order if node not in self._column]
        if unknown:
            raise ValueError(f"intervention order: {unknown} are not nodes of the model")
        self._interventions(len(x), true_values, torch.zeros(true_values.shape, dtype=torch.bool))  # checks
        truth = true_values.t().long().clamp(min=0)
        known = true_values.t() >= 0
        intervened = torch.zeros_like(known)
        messages: Messages = {None: self.encoder(x).t()}
        groups = self._plan(self._order, x.device).run(messages, (truth, intervened))
        sweep = [self._task_logits(groups)]
        for node in order:
            column = self._column[node]
            intervened[column] = known[column]
            changed = {node} | self._computation.descendants(node)
            plan = self._plan(tuple(n for n in self._order if n in changed), x.device)
            sweep.append(self._task_logits(plan.run(messages, (truth, intervened)), sweep[-1]))
        return sweep

    def _task_logits(self, groups: list[tuple[tuple[str, ...], Tensor]], unchanged: Tensor | None = None) -> Tensor:
        """The task's logits (n, cardinality) among ``groups``, or ``unchanged`` where none computed it."""
        for nodes, stacked in groups:
            if self.graph.task in nodes:
                return stacked[nodes.index(self.graph.task), : self.graph.cardinalities[self.graph.task]].t()
        if unchanged is None:
            raise ValueError("the task is not among the computed nodes")
        return unchanged

    def _evaluate(
        self,
        nodes: Iterable[str],
        encoding: Tensor,
        interventions: tuple[Tensor, Tensor] | None,
        logits: dict[str, Tensor],
        messages: dict[str, Tensor],
    ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """Compute ``nodes`` in turn (sources before their readers) into ``logits`` and ``messages``; return both."""
        for node in nodes:
            logits[node], messages[node] = self._node_step(node, encoding, messages, interventions)
        return logits, messages

    def _node_step(
        self, node: str, encoding: Tensor, messages: dict[str, Tensor], interventions: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, Tensor]:
        """``node``'s logits and the message it feeds its children, from the encoding and its sources' messages."""
        slots = self._specs[node].slots
        parts = [encoding if slot.source is None else messages[slot.source] for slot in slots]
        inputs = torch.cat(parts, dim=1) if parts else encoding.new_zeros(len(encoding), 0)
        output = self._block(node)(encoding, inputs)
        fed = torch.softmax(output.logits, dim=1)
        if interventions is not None:
            truth, mask = interventions
            k = self._column[node]
            true_one_hot = F.one_hot(truth[:, k], output.logits.shape[1]).to(fed)
            fed = torch.where(mask[:, k, None], true_one_hot, fed)
        message = fed if output.values is None else torch.einsum("nv,nve->ne", fed, output.values)
        return output.logits, message

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
                    fill = new_weights(self.params.init, derive_seed(self.seed, "rewire", node, *graph.nodes))
                    self._block(node).rewire(old.slots, spec.slots, fill)
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

    def _block(self, node: str) -> NodeBlock:
        """The module of ``node`` (``nodes`` holds only the blocks :meth:`_install` put there)."""
        return cast(NodeBlock, self.nodes[_node_key(node)])  # ModuleDict is not generic: its items are Modules

    def _install(self, node: str, spec: NodeSpec) -> None:
        """Give ``node`` a new module built from ``spec``, on the encoder's device and dtype."""
        module = seeded(derive_seed(self.seed, "node", node), lambda: spec.block(spec, self.params))
        self.nodes[_node_key(node)] = module.to(next(self.encoder.parameters()))
        self._specs[node] = spec

    def _set_graph(self, graph: ConceptGraph) -> None:
        """Make ``graph`` current, with the order in which the nodes are evaluated."""
        self.graph = graph
        self._column = {node: k for k, node in enumerate(graph.nodes)}
        sources = {node: self._specs[node].sources for node in graph.nodes}
        self._computation = ConceptGraph(graph.nodes, graph.task, graph.cardinalities, sources)
        self._order = self._computation.topological_order()
        self._plans = {}

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

    def check_values(self, true_values: Tensor) -> None:
        """Raise ValueError if a value of ``true_values`` (columns in ``graph.nodes`` order) reaches its node's cardinality."""
        cards = torch.tensor([self.graph.cardinalities[node] for node in self.graph.nodes], device=true_values.device)
        if (true_values >= cards).any():
            raise ValueError("true_values: a value is >= its node's cardinality")

    def _interventions(
        self, n: int, true_values: Tensor | None, intervene: Tensor | None, *, check: bool = True
    ) -> tuple[Tensor, Tensor] | None:
        """The true values (unknown ones as 0) and where to feed them, or None without interventions."""
        if intervene is None:
            return None
        if true_values is None:
            raise ValueError("intervene needs true_values")
        shape = (n, len(self.graph.nodes))
        for name, tensor in (("true_values", true_values), ("intervene", intervene)):
            if tuple(tensor.shape) != shape:
                raise ValueError(f"{name} must have shape {shape} (got {tuple(tensor.shape)})")
        if check:
            self.check_values(true_values)
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
