"""The graph a concept-based model predicts: its concepts, the task, their cardinalities and the DAG among them."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fedmosaic.errors import FedmosaicError


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

    def descendants(self, node: str) -> frozenset[str]:
        """The nodes with a directed path from ``node`` (``node`` itself excluded).

        Examples
        --------
        >>> graph = ConceptGraph(("a", "b", "y"), "y", {"a": 2, "b": 2, "y": 2}, {"b": ("a",), "y": ("b",)})
        >>> sorted(graph.descendants("a"))
        ['b', 'y']
        """
        return frozenset(other for other in self.nodes if node in self.ancestors(other))


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
