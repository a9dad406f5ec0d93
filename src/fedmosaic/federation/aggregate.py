"""Aggregation by tensor name over the replies that contain it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def weighted_average(
    contributions: Sequence[tuple[Mapping[str, np.ndarray], float]],
) -> dict[str, np.ndarray]:
    """Weighted average of each named array over the contributions holding it.

    FedAvg is the special case where every contribution holds every name.
    A name held by only some contributions is averaged over those alone,
    with their weights renormalised.

    Parameters
    ----------
    contributions : sequence of (mapping of str to ndarray, float)
        Named arrays of each participant and its weight (e.g. its number of
        training examples). Weights must be positive.

    Returns
    -------
    dict of str to numpy.ndarray
        The average of each name, in the dtype of its first contribution
        (integer arrays are rounded).

    Raises
    ------
    ValueError
        If a weight is not positive and finite, or if contributions disagree
        on the shape of a name.

    Examples
    --------
    >>> import numpy as np
    >>> a = {"w": np.array([0.0, 2.0]), "b": np.array([1.0])}
    >>> b = {"w": np.array([4.0, 2.0])}
    >>> out = weighted_average([(a, 1.0), (b, 3.0)])
    >>> out["w"].tolist(), out["b"].tolist()
    ([3.0, 2.0], [1.0])
    """
    sums: dict[str, np.ndarray] = {}
    totals: dict[str, float] = {}
    templates: dict[str, np.ndarray] = {}
    for arrays, weight in contributions:
        if not np.isfinite(weight) or weight <= 0:
            raise ValueError(f"weights must be positive and finite, got {weight}")
        for name, array in arrays.items():
            if name not in templates:
                templates[name] = array
                sums[name] = np.zeros(array.shape, dtype=np.float64)
                totals[name] = 0.0
            elif array.shape != templates[name].shape:
                raise ValueError(f"array {name!r}: shape {array.shape} differs from {templates[name].shape}")
            sums[name] += weight * np.asarray(array, dtype=np.float64)
            totals[name] += weight
    return {name: cast_to_dtype(sums[name] / totals[name], templates[name].dtype) for name in sums}


def cast_to_dtype(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` (a float average) in ``dtype``; integers are rounded."""
    if np.issubdtype(dtype, np.integer):
        rounded: np.ndarray = np.rint(values).astype(dtype)
        return rounded
    return values.astype(dtype)
