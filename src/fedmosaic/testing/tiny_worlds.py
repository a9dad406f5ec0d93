"""Tiny hand-made data for the method contract: a concept world and a vertical task of three parties.

The concept world has three concepts and a task with the true DAG ``a -> b -> y`` and ``c -> y``:

- ``a`` in {0, 1}, uniform;
- ``b`` in {0, 1, 2}: ``2 * a`` with probability 0.8, otherwise uniform;
- ``c`` in {0, 1}, uniform;
- ``y`` in {0, 1}: ``(b >= 1) xor c``, flipped with probability 0.1.

The input ``x`` is the one-hot code of ``(a, b, c)`` (7 columns) plus Gaussian
noise, so the concepts are learnable from ``x``; the task is not encoded.
Each client labels a subset of the nodes and states the true DAG restricted to
it as its confidence matrix (oracle beliefs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, hold_out_validation, vertical_split
from fedmosaic.methods.concepts.task import ConceptClientData, LabeledConcepts

NODES = ("a", "b", "c", "y")
TASK = "y"
CARDINALITIES = {"a": 2, "b": 3, "c": 2, "y": 2}
EDGES = (("a", "b"), ("b", "y"), ("c", "y"))
INPUT_DIM = 7
COLUMNS = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5, 6])]
"""The vertical task's parties' columns."""


def sample_concepts(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(x, values)`` of ``n`` samples of the concept world; ``values`` columns follow :data:`NODES`.

    Examples
    --------
    >>> x, values = sample_concepts(5, np.random.default_rng(0))
    >>> x.shape, values.shape
    ((5, 7), (5, 4))
    """
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, 2 * a, rng.integers(0, 3, n))
    c = rng.integers(0, 2, n)
    y = ((b >= 1) ^ (c == 1)).astype(np.int64)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)
    values = np.stack([a, b, c, y], axis=1).astype(np.int64)
    one_hot = np.concatenate([np.eye(2)[a], np.eye(3)[b], np.eye(2)[c]], axis=1)
    x = (one_hot + 0.3 * rng.standard_normal(one_hot.shape)).astype(np.float32)
    return x, values


def labeled(x: np.ndarray, values: np.ndarray, names: Sequence[str]) -> LabeledConcepts:
    """The columns ``names`` of ``values`` (in :data:`NODES` order) with their inputs."""
    columns = [NODES.index(n) for n in names]
    return LabeledConcepts(x=x, values=np.ascontiguousarray(values[:, columns]), names=tuple(names))


def client_data(
    concepts: Sequence[str], *, seed: int, n_train: int = 200, n_val: int = 50, edges: Sequence[tuple[str, str]] = EDGES
) -> ConceptClientData:
    """One client labeling ``concepts``, with the DAG ``edges`` restricted to them as beliefs."""
    rng = np.random.default_rng([seed, 17])
    train, val = sample_concepts(n_train, rng), sample_concepts(n_val, rng)
    return ConceptClientData(
        train=labeled(*train, concepts),
        val=labeled(*val, concepts),
        confidence=ConfidenceMatrix.from_dag(concepts, edges),
    )


def tiny_vertical_data(
    seed: int = 0, train_missing: float = 0.3, *, missingness: Missingness | None = None, validation: float = 0.0
) -> VerticalData:
    """60 training rows (20 labeled, ``validation`` of them held out) and 30 test rows over parties of widths 3, 2, 2."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=90)
    x = (rng.normal(size=(90, 7)) + y[:, None]).astype(np.float32)
    train = vertical_split(x[:60], y[:60], COLUMNS, missingness or Missingness("mcar", train_missing), rng, 20)
    test = vertical_split(x[60:], y[60:], COLUMNS, Missingness("mcar", 0.3), rng)
    train, held_out = hold_out_validation(train, validation, rng)
    return VerticalData(train, {"MCAR 3": test}, 3, "gaussian", held_out)
