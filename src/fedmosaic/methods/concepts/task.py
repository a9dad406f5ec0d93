"""What F-CMs is built from: each client's concept data and the global test set."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.methods.concepts.models import ConceptGraph
from fedmosaic.methods.train_params import TrainParams


@dataclass(frozen=True, eq=False)
class LabeledConcepts:
    """Inputs and the values of some concepts for a set of samples.

    Parameters
    ----------
    x : numpy.ndarray
        Inputs, float32 of shape (n, d).
    values : numpy.ndarray
        Integer-coded values, int64 of shape (n, len(names)); -1 where a row
        is not labeled for that concept (sites' own tables).
    names : tuple of str
        The concepts (the task may be one) that ``values`` holds, by column.
    """

    x: np.ndarray
    values: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.values.shape != (len(self.x), len(self.names)):
            raise ValueError(f"values must have shape ({len(self.x)}, {len(self.names)}), got {self.values.shape}")

    def __len__(self) -> int:
        return len(self.x)

    def aligned(self, nodes: tuple[str, ...]) -> np.ndarray:
        """Values in the column order of ``nodes``, ``-1`` where a node is not held."""
        out = np.full((len(self.x), len(nodes)), -1, dtype=np.int64)
        index = {name: i for i, name in enumerate(self.names)}
        for column, node in enumerate(nodes):
            if node in index:
                out[:, column] = self.values[:, index[node]]
        return out


@dataclass(frozen=True, eq=False)
class ConceptClientData:
    """One client's private data.

    Parameters
    ----------
    train, val : LabeledConcepts
        Training and validation samples, labeled for the client's concepts
        (and the task when the client has task labels).
    confidence : ConfidenceMatrix
        The client's beliefs about the edges among its concepts.
    """

    train: LabeledConcepts
    val: LabeledConcepts
    confidence: ConfidenceMatrix


@dataclass(frozen=True, eq=False)
class ConceptTask:
    """Everything an F-CMs federation is built from.

    Parameters
    ----------
    clients : list of ConceptClientData
        By client id.
    test : LabeledConcepts
        The global test set, labeled for every node.
    task : str
        The task node.
    cardinalities : dict of str to int
        Number of values of every node.
    true_ancestors : frozenset of str
        The task's ancestors in the true graph (for concept coverage).
    train : TrainParams
        Local training hyper-parameters.
    last_arrival : int
        Round at which the last client joins (early stopping waits for it).
    rounds : int
        Number of rounds of the federation.
    extras : dict of str to float
        Facts of the data reported with the final metrics (e.g. the Bayes ceiling).
    true_edges : tuple of (str, str) or None
        Every edge ``(parent, child)`` of the true graph where the data come
        from a known network, recorded for the report; None for a table's concepts.
    """

    clients: list[ConceptClientData]
    test: LabeledConcepts
    task: str
    cardinalities: dict[str, int]
    true_ancestors: frozenset[str]
    train: TrainParams
    last_arrival: int = 1
    rounds: int = 1
    extras: dict[str, float] = field(default_factory=dict)
    true_edges: tuple[tuple[str, str], ...] | None = None

    @property
    def input_dim(self) -> int:
        """Width of the inputs."""
        return int(self.test.x.shape[1])


def encode_graph(graph: ConceptGraph) -> str:
    """A concept graph as compact JSON (it travels in message config)."""
    return json.dumps(
        {
            "nodes": list(graph.nodes),
            "task": graph.task,
            "cardinalities": {n: int(graph.cardinalities[n]) for n in graph.nodes},
            "parents": {n: list(graph.parents.get(n, ())) for n in graph.nodes},
        },
        separators=(",", ":"),
    )


def decode_graph(text: str) -> ConceptGraph:
    """The concept graph encoded by :func:`encode_graph`."""
    spec = json.loads(text)
    return ConceptGraph(
        nodes=tuple(spec["nodes"]),
        task=spec["task"],
        cardinalities=dict(spec["cardinalities"]),
        parents={n: tuple(p) for n, p in spec["parents"].items()},
    )
