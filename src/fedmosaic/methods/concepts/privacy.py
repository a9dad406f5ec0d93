"""Randomized response on a client's local graph (three states per concept pair)."""

from __future__ import annotations

import math

import numpy as np

from fedmosaic.data.confidence import ConfidenceMatrix


def most_believed_states(matrix: ConfidenceMatrix) -> np.ndarray:
    """Each pair's most believed state: 0 edge ``i -> j``, 1 edge ``j -> i``, 2 no edge (upper triangle, row-major).

    Ties go to the lower state number.

    Examples
    --------
    >>> m = ConfidenceMatrix(("a", "b", "c"), np.array([[0, .7, .1], [.2, 0, 0], [.1, .3, 0]]))
    >>> most_believed_states(m).tolist()
    [0, 2, 2]
    """
    values = np.asarray(matrix.values)
    i, j = np.triu_indices(len(values), k=1)
    beliefs = np.stack([values[i, j], values[j, i], 1.0 - values[i, j] - values[j, i]], axis=1)
    choices: np.ndarray = np.argmax(beliefs, axis=1)
    return choices


def randomized_response(matrix: ConfidenceMatrix, epsilon: float, rng: np.random.Generator) -> ConfidenceMatrix:
    """A 0/1 confidence matrix reporting each pair's state with randomized response.

    The true (most believed) state is kept with probability
    ``e^eps / (e^eps + 2)``; otherwise one of the two other states is
    reported, each with probability ``1 / (e^eps + 2)``. Each pair's report
    is eps-locally differentially private.

    Parameters
    ----------
    matrix : ConfidenceMatrix
        The client's beliefs.
    epsilon : float
        Privacy parameter per pair (> 0).
    rng : numpy.random.Generator
        Derived randomness of the client.

    Examples
    --------
    >>> m = ConfidenceMatrix(("a", "b"), np.array([[0.0, 0.9], [0.0, 0.0]]))
    >>> randomized_response(m, 50.0, np.random.default_rng(0)).values.tolist()
    [[0.0, 1.0], [0.0, 0.0]]
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    states = most_believed_states(matrix)
    keep = math.exp(epsilon) / (math.exp(epsilon) + 2.0)
    flipped = rng.random(len(states)) >= keep
    shift = rng.integers(1, 3, size=len(states))  # to one of the two other states, uniformly
    reported = np.where(flipped, (states + shift) % 3, states)
    size = len(matrix.names)
    values = np.zeros((size, size))
    i, j = np.triu_indices(size, k=1)
    values[i[reported == 0], j[reported == 0]] = 1.0
    values[j[reported == 1], i[reported == 1]] = 1.0
    return ConfidenceMatrix(matrix.names, values)
