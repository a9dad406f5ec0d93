"""A network's sampled splits: each split's inputs and concept values, and the network's structure.

:func:`~fedmosaic.data.bayesnet.sample_concept_splits` draws them; :meth:`ConceptSplits.to_arrays`
and :meth:`ConceptSplits.from_arrays` write and read them as plain arrays (the splits cache,
:mod:`fedmosaic.data.splits_cache`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedmosaic.errors import FedmosaicError

SPLIT_NAMES = ("train", "val", "test")


@dataclass(frozen=True, eq=False)
class ConceptDataset:
    """Samples of a network: model inputs and the value of every concept.

    Parameters
    ----------
    x : np.ndarray
        Input features, float32, shape ``(n, d)``.
    concepts : np.ndarray
        Integer code of every concept, int64, shape ``(n, V)``; column ``j``
        is ``names[j]`` and code ``k`` is ``states[names[j]][k]``.
    names : tuple[str, ...]
        Every variable of the network, the task included, in column order.
    task : str
        The concept to predict; one of ``names``.
    cardinalities : dict[str, int]
        Number of states of each concept.
    states : dict[str, list[str]]
        State names of each concept, in code order (the order of its CPD).

    Raises
    ------
    FedmosaicError
        If the shapes, dtypes, names or codes disagree.

    Examples
    --------
    >>> import numpy as np
    >>> data = ConceptDataset(
    ...     x=np.zeros((3, 2), np.float32),
    ...     concepts=np.array([[0, 1], [1, 1], [1, 0]]),
    ...     names=("rain", "wet"),
    ...     task="wet",
    ...     cardinalities={"rain": 2, "wet": 2},
    ...     states={"rain": ["no", "yes"], "wet": ["no", "yes"]},
    ... )
    >>> len(data), data.columns(["wet"]).ravel().tolist(), data.subset([2]).concepts.tolist()
    (3, [1, 1, 0], [[1, 0]])
    """

    x: np.ndarray
    concepts: np.ndarray
    names: tuple[str, ...]
    task: str
    cardinalities: dict[str, int]
    states: dict[str, list[str]]

    def __post_init__(self) -> None:
        if self.x.dtype != np.float32 or self.x.ndim != 2:
            raise FedmosaicError(
                f"ConceptDataset.x must be a float32 array of shape (n, d) (got {self.x.dtype} of shape {self.x.shape})"
            )
        expected = (len(self.x), len(self.names))
        if self.concepts.dtype != np.int64 or self.concepts.shape != expected:
            raise FedmosaicError(
                f"ConceptDataset.concepts must be an int64 array of shape {expected} "
                f"(got {self.concepts.dtype} of shape {self.concepts.shape})"
            )
        if self.task not in self.names:
            raise FedmosaicError(f"ConceptDataset.task {self.task!r} is not one of its names")
        if set(self.cardinalities) != set(self.names) or set(self.states) != set(self.names):
            raise FedmosaicError("ConceptDataset.cardinalities and .states must have one entry per name")
        limits = np.array([self.cardinalities[name] for name in self.names])
        if len(self.concepts) and (self.concepts.min() < 0 or (self.concepts >= limits).any()):
            raise FedmosaicError("ConceptDataset.concepts must lie in [0, cardinality) in every column")

    def __len__(self) -> int:
        return len(self.concepts)

    def columns(self, names: Sequence[str]) -> np.ndarray:
        """Codes of the given concepts, shape ``(n, len(names))``, in the order given."""
        return self.concepts[:, [self.names.index(name) for name in names]]

    def subset(self, rows: npt.ArrayLike) -> ConceptDataset:
        """Select samples by position; returns a new dataset holding copies of the rows."""
        rows = np.asarray(rows, dtype=np.int64)
        return ConceptDataset(
            x=self.x[rows],
            concepts=self.concepts[rows],
            names=self.names,
            task=self.task,
            cardinalities=self.cardinalities,
            states=self.states,
        )


@dataclass(frozen=True)
class ConceptSplits:
    """The three splits of a network's samples and the network's structure.

    Parameters
    ----------
    train, val, test : ConceptDataset
        Independent forward samplings (70/10/20 of the samples).
    graph_edges : tuple[tuple[str, str], ...]
        Every edge ``(parent, child)`` of the true network.
    task : str
        The task concept.
    inputs : tuple[str, ...]
        The variables the autoencoder behind ``x`` encodes: all but the task,
        or all of them when the task is leaked into ``x``.
    bayes_optimal_accuracy : float
        Test accuracy of the Bayes-optimal prediction of the task from every
        other concept under the true network: the ceiling of any model.
    probe_accuracy : float
        Test accuracy of a logistic regression from ``x`` to the task, fitted
        on the train split: what the inputs give away.
    latent_std : float
        Standard deviation of the autoencoder's latent before the noise
        (train split, root mean square over its dimensions); 1 where the
        latent is put on unit scale first.
    """

    train: ConceptDataset
    val: ConceptDataset
    test: ConceptDataset
    graph_edges: tuple[tuple[str, str], ...]
    task: str
    inputs: tuple[str, ...]
    bayes_optimal_accuracy: float
    probe_accuracy: float
    latent_std: float = 1.0

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array of the splits and, as UTF-8 JSON bytes under ``"structure"``, the rest.

        Examples
        --------
        >>> data = ConceptDataset(np.zeros((1, 2), np.float32), np.zeros((1, 1), np.int64), ("y",), "y", {"y": 2}, {"y": ["a", "b"]})
        >>> splits = ConceptSplits(data, data, data, (), "y", ("y",), 1.0, 0.5, 0.5)
        >>> back = ConceptSplits.from_arrays(splits.to_arrays())
        >>> back.latent_std, back.test.states, back.val.x.shape
        (0.5, {'y': ['a', 'b']}, (1, 2))
        """
        first = self.train
        structure = {
            "names": list(first.names),
            "task": self.task,
            "cardinalities": first.cardinalities,
            "states": first.states,
            "graph_edges": [list(edge) for edge in self.graph_edges],
            "inputs": list(self.inputs),
            "bayes_optimal_accuracy": self.bayes_optimal_accuracy,
            "probe_accuracy": self.probe_accuracy,
            "latent_std": self.latent_std,
        }
        arrays = {"structure": np.frombuffer(json.dumps(structure).encode(), dtype=np.uint8)}
        for name in SPLIT_NAMES:
            split: ConceptDataset = getattr(self, name)
            arrays[f"{name}_x"], arrays[f"{name}_concepts"] = split.x, split.concepts
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> ConceptSplits:
        """The splits :meth:`to_arrays` wrote (checked as on construction)."""
        structure = json.loads(arrays["structure"].tobytes().decode())
        names = tuple(structure["names"])
        datasets = {
            name: ConceptDataset(
                arrays[f"{name}_x"],
                arrays[f"{name}_concepts"],
                names,
                structure["task"],
                structure["cardinalities"],
                structure["states"],
            )
            for name in SPLIT_NAMES
        }
        return cls(
            **datasets,
            graph_edges=tuple((parent, child) for parent, child in structure["graph_edges"]),
            task=structure["task"],
            inputs=tuple(structure["inputs"]),
            bayes_optimal_accuracy=float(structure["bayes_optimal_accuracy"]),
            probe_accuracy=float(structure["probe_accuracy"]),
            latent_std=float(structure["latent_std"]),
        )
