"""Aggregation rules by tensor name: the mean, robust rules, and norm-bounded updates.

Every rule combines each named array over the contributions that hold it,
like :func:`~fedmosaic.federation.aggregate.weighted_average`, so a module
uploaded by only some clients is combined over those alone. The robust
rules ignore the weights (a weight is the client's own claim):

* :class:`Median`: coordinate-wise median;
* :class:`TrimmedMean`: per coordinate, the mean after dropping the
  ``trim`` share of the smallest and of the largest values;
* :class:`ClippedUpdates`: wraps another rule; each contribution's update
  (its array minus the array sent, the *reference*) is scaled down, module
  by module, to an L2 norm of at most ``max_norm``.

A *module* is a tensor name up to its last dot (``encoder.0.weight`` and
``encoder.0.bias`` form ``encoder.0``), i.e. one layer.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
from typing_extensions import override

from fedmosaic.federation.aggregate import cast_to_dtype, weighted_average

Contribution = tuple[Mapping[str, np.ndarray], float]


def module_of(name: str) -> str:
    """The module a tensor belongs to: its name up to the last dot.

    Examples
    --------
    >>> module_of("nodes.a.net.0.weight"), module_of("w")
    ('nodes.a.net.0', 'w')
    """
    return name.rsplit(".", 1)[0]


class Aggregator(ABC):
    """Combines one round's contributions into new global arrays, name by name."""

    @property
    def adds_noise(self) -> bool:
        """Whether the rule adds noise for privacy (the round is then accounted); False for every rule here."""
        return False

    @abstractmethod
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        """The combined arrays.

        Parameters
        ----------
        contributions : sequence of (mapping of str to ndarray, float)
            Each participant's arrays and weight (its number of examples).
        reference : mapping of str to ndarray
            The arrays the participants received (updates are measured from them).
        rng : numpy.random.Generator or None
            Derived randomness for rules that draw (noise).
        """


class Mean(Aggregator):
    """The weighted mean: FedAvg's rule.

    Examples
    --------
    >>> import numpy as np
    >>> out = Mean().aggregate([({"w": np.array([0.0])}, 1.0), ({"w": np.array([4.0])}, 3.0)], {}, None)
    >>> out["w"].tolist()
    [3.0]
    """

    @override
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        return weighted_average(contributions)


class Median(Aggregator):
    """Coordinate-wise median over the contributions holding each name (weights ignored).

    Examples
    --------
    >>> import numpy as np
    >>> parts = [({"w": np.array([v])}, 1.0) for v in (1.0, 2.0, 100.0)]
    >>> Median().aggregate(parts, {}, None)["w"].tolist()
    [2.0]
    """

    @override
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        return {
            name: cast_to_dtype(np.median(stack, axis=0), dtype)
            for name, (stack, dtype) in _stacks(contributions).items()
        }


class TrimmedMean(Aggregator):
    """Coordinate-wise mean after dropping the ``trim`` share of values at each end.

    Parameters
    ----------
    trim : float, default 0.2
        Share of the contributions dropped at each end, in [0, 0.5); at
        least one value always remains.

    Examples
    --------
    >>> import numpy as np
    >>> parts = [({"w": np.array([v])}, 1.0) for v in (-50.0, 1.0, 2.0, 3.0, 90.0)]
    >>> TrimmedMean(0.2).aggregate(parts, {}, None)["w"].tolist()
    [2.0]
    """

    def __init__(self, trim: float = 0.2) -> None:
        if not 0.0 <= trim < 0.5:
            raise ValueError(f"trim must be in [0, 0.5), got {trim}")
        self.trim = trim

    @override
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        out = {}
        for name, (stack, dtype) in _stacks(contributions).items():
            count = len(stack)
            cut = min(math.floor(self.trim * count), (count - 1) // 2)
            kept = np.sort(stack, axis=0)[cut : count - cut]
            out[name] = cast_to_dtype(kept.mean(axis=0), dtype)
        return out


class ClippedUpdates(Aggregator):
    """Bounds each contribution's update per module, then combines with ``inner``.

    Parameters
    ----------
    inner : Aggregator
        The rule applied to the bounded contributions.
    max_norm : float
        Largest L2 norm of one module's update (> 0).

    Notes
    -----
    Names absent from the reference and integer arrays (counters) are
    passed on unclipped.

    Examples
    --------
    >>> import numpy as np
    >>> parts = [({"l.w": np.array([3.0, 4.0])}, 1.0)]
    >>> np.round(ClippedUpdates(Mean(), 1.0).aggregate(parts, {"l.w": np.zeros(2)}, None)["l.w"], 6).tolist()
    [0.6, 0.8]
    """

    def __init__(self, inner: Aggregator, max_norm: float) -> None:
        if not max_norm > 0:
            raise ValueError(f"max_norm must be > 0, got {max_norm}")
        self.inner = inner
        self.max_norm = max_norm

    @override
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        clipped = [(clip_update(arrays, reference, self.max_norm), w) for arrays, w in contributions]
        return self.inner.aggregate(clipped, reference, rng)


def clip_update(
    arrays: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], max_norm: float
) -> dict[str, np.ndarray]:
    """``arrays`` with each module's update from ``reference`` scaled to an L2 norm of at most ``max_norm``.

    Examples
    --------
    >>> import numpy as np
    >>> out = clip_update({"a.w": np.array([6.0, 8.0]), "b.w": np.array([0.3])}, {"a.w": np.zeros(2), "b.w": np.zeros(1)}, 5.0)
    >>> out["a.w"].tolist(), out["b.w"].tolist()
    ([3.0, 4.0], [0.3])
    """
    updates: dict[str, dict[str, np.ndarray]] = defaultdict(dict)
    out: dict[str, np.ndarray] = {}
    for name, array in arrays.items():
        base = reference.get(name)
        if base is None or array.dtype.kind != "f" or base.shape != array.shape:
            out[name] = array
        else:
            updates[module_of(name)][name] = np.asarray(array, np.float64) - np.asarray(base, np.float64)
    for parts in updates.values():
        norm = math.sqrt(sum(float(np.sum(u * u)) for u in parts.values()))
        scale = min(1.0, max_norm / norm) if norm > 0 else 1.0
        for name, update in parts.items():
            out[name] = (np.asarray(reference[name], np.float64) + scale * update).astype(arrays[name].dtype)
    return out


def _stacks(contributions: Sequence[Contribution]) -> dict[str, tuple[np.ndarray, np.dtype]]:
    held: dict[str, list[np.ndarray]] = defaultdict(list)
    for arrays, _ in contributions:
        for name, array in arrays.items():
            if held[name] and array.shape != held[name][0].shape:
                raise ValueError(f"array {name!r}: shape {array.shape} differs from {held[name][0].shape}")
            held[name].append(np.asarray(array))
    return {name: (np.stack(parts).astype(np.float64), parts[0].dtype) for name, parts in held.items()}
