"""A client's local confidence matrix over its concepts.

:func:`oracle_confidence` restricts the true DAG to the client's concepts
(optionally corrupted); :func:`learned_confidence` learns it from the
client's data (bootstrapped structure learning with pgmpy).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from fedmosaic.data.confidence import Edge
from fedmosaic.errors import ConfigError


def oracle_confidence(
    edges: Iterable[Edge],
    concepts: Sequence[str],
    rng: np.random.Generator,
    corrupt: bool,
    fraction: float = 0.1,
) -> tuple[tuple[str, ...], np.ndarray]:
    """A client's confidence matrix from the true DAG restricted to its concepts.

    Without corruption ``A[i, j] = 1`` exactly when ``concepts[i] ->
    concepts[j]`` is an edge of the true DAG. With corruption,
    ``max(1, round(fraction * P))`` of the ``P`` unordered concept pairs are
    drawn at random, and each is moved from its state (``i -> j``, ``j -> i``
    or no edge) to one of the two other states at random: an edge is inverted
    or removed, a missing edge is added in a random direction. So exactly the
    drawn pairs differ from the truth.

    Parameters
    ----------
    edges : Iterable[tuple[str, str]]
        ``(parent, child)`` pairs of the true DAG.
    concepts : Sequence[str]
        The client's concepts, in matrix order.
    rng : np.random.Generator
        Source of randomness (used only when ``corrupt``).
    corrupt : bool
        Whether to perturb the pairs.
    fraction : float, optional
        Share of pairs perturbed, in [0, 1].

    Returns
    -------
    names : tuple[str, ...]
        ``concepts`` as a tuple.
    matrix : np.ndarray
        float64 of shape ``(k, k)`` with 0/1 entries, zero diagonal and
        ``A[i, j] + A[j, i] <= 1``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> names, matrix = oracle_confidence([("a", "b"), ("b", "c")], ["c", "b"], rng, corrupt=False)
    >>> names, matrix.tolist()
    (('c', 'b'), [[0.0, 0.0], [1.0, 0.0]])
    """
    if not 0 <= fraction <= 1:
        raise ConfigError("partition.corrupted_pairs", f"must be in [0, 1] (got {fraction})")
    names = tuple(concepts)
    position = {name: index for index, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)))
    for parent, child in edges:
        if parent in position and child in position:
            matrix[position[parent], position[child]] = 1.0
    if corrupt:
        _perturb_pairs(matrix, fraction, rng)
    return names, matrix


_NO_EDGE, _FORWARD, _BACKWARD = 0, 1, 2


def _perturb_pairs(matrix: np.ndarray, fraction: float, rng: np.random.Generator) -> None:
    pairs = list(itertools.combinations(range(len(matrix)), 2))
    if not pairs or fraction == 0:
        return
    for index in rng.choice(len(pairs), size=max(1, round(fraction * len(pairs))), replace=False):
        i, j = pairs[int(index)]
        state = _FORWARD if matrix[i, j] else _BACKWARD if matrix[j, i] else _NO_EDGE
        new = [other for other in (_NO_EDGE, _FORWARD, _BACKWARD) if other != state][int(rng.integers(2))]
        matrix[i, j], matrix[j, i] = float(new == _FORWARD), float(new == _BACKWARD)


def learned_confidence(
    concept_values: np.ndarray,
    names: Sequence[str],
    rng: np.random.Generator,
    n_bootstrap: int = 10,
    score: str = "bic-d",
) -> tuple[tuple[str, ...], np.ndarray]:
    """A client's confidence matrix learned from its own labels by bootstrap structure learning.

    On each of ``n_bootstrap`` resamples (rows drawn with replacement),
    pgmpy's ``HillClimbSearch`` maximises ``score`` and returns the learned
    equivalence class as a PDAG. A directed edge ``i -> j`` counts 1 for
    ``A[i, j]``; an undirected edge (its direction is not identifiable from
    data) counts 1/2 for each direction. ``A`` is the average over resamples,
    so ``A[i, j] + A[j, i]`` is the frequency of an edge between ``i`` and
    ``j`` and never exceeds 1.

    Parameters
    ----------
    concept_values : np.ndarray
        Integer codes of the client's concepts, shape ``(n, k)``, ``n >= 1``.
    names : Sequence[str]
        The concept of each column.
    rng : np.random.Generator
        Source of the resampled rows.
    n_bootstrap : int, optional
        Number of resamples (>= 1).
    score : str, optional
        pgmpy score for discrete data: ``"bic-d"``, ``"k2"``, ``"bdeu"``, ...

    Returns
    -------
    names : tuple[str, ...]
        ``names`` as a tuple.
    matrix : np.ndarray
        float64 of shape ``(k, k)`` in [0, 1], zero diagonal,
        ``A[i, j] + A[j, i] <= 1``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 300)
    >>> values = np.stack([a, a, rng.integers(0, 2, 300)], axis=1)
    >>> names, matrix = learned_confidence(values, ["a", "b", "c"], rng, n_bootstrap=3)
    >>> float(matrix[0, 1] + matrix[1, 0]), float(matrix[0, 2] + matrix[2, 0])
    (1.0, 0.0)
    """
    from pgmpy.causal_discovery import HillClimbSearch  # seconds to import: only where a graph is learned

    if n_bootstrap < 1:
        raise ConfigError("partition.n_bootstrap", f"must be >= 1 (got {n_bootstrap})")
    names = tuple(names)
    position = {name: index for index, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)))
    for _ in range(n_bootstrap):
        rows = rng.integers(0, len(concept_values), size=len(concept_values))
        frame = pd.DataFrame(concept_values[rows], columns=list(names)).astype("category")
        learned = (
            HillClimbSearch(scoring_method=score, return_type="pdag", show_progress=False).fit(frame).causal_graph_
        )
        for parent, child in learned.directed_edges:
            matrix[position[parent], position[child]] += 1.0
        for first, second in {frozenset(edge) for edge in learned.undirected_edges}:
            matrix[position[first], position[second]] += 0.5
            matrix[position[second], position[first]] += 0.5
    return names, matrix / n_bootstrap
