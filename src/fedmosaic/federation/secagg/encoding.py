"""Fixed-point encoding of weighted updates into one vector of integers modulo 2^64.

A client encodes, for every named array of the round's :class:`Layout`, its
update (what it sends minus what it received) clipped to ``[-r, r]`` per
coordinate, rounded to the nearest multiple of ``r / 2^31`` and multiplied
by its integer weight (its number of examples), followed by one weight per
array (its weight where it uploads the array, 0 where it does not). Signed
values are stored in two's complement, so that the sum of the clients'
vectors, wrapping modulo 2^64 like the masks, is exact as long as the total
weight of an array stays below 2^32.

The error of a weighted mean decoded from the sum is at most half a step,
``r / 2^32`` per coordinate, for updates within ``[-r, r]``; a coordinate
beyond is clipped to the range.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

STEPS = 2**31
"""Steps of the fixed-point grid on each side of zero: a step is ``clip_range / STEPS``."""
MAX_TOTAL_WEIGHT = 2**32
"""Largest total weight of one array whose weighted sum stays exact modulo 2^64."""


@dataclass(frozen=True)
class Layout:
    """The names and shapes of the arrays summed in a round, in order.

    Examples
    --------
    >>> import numpy as np
    >>> layout = Layout.of({"b": np.zeros(2), "a": np.zeros((2, 3))})
    >>> layout.names, layout.size
    (('a', 'b'), 10)
    >>> Layout.from_text(layout.to_text()) == layout
    True
    """

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, arrays: Mapping[str, np.ndarray]) -> Layout:
        """The layout of ``arrays``, names sorted."""
        names = tuple(sorted(arrays))
        return cls(names, tuple(tuple(int(n) for n in arrays[name].shape) for name in names))

    @classmethod
    def from_text(cls, text: str) -> Layout:
        """The layout :meth:`to_text` wrote."""
        pairs = json.loads(text)
        return cls(tuple(str(n) for n, _ in pairs), tuple(tuple(int(d) for d in s) for _, s in pairs))

    def to_text(self) -> str:
        """A compact JSON list of ``[name, shape]`` pairs, for a message's config."""
        return json.dumps([[n, list(s)] for n, s in zip(self.names, self.shapes, strict=True)], separators=(",", ":"))

    @property
    def values(self) -> int:
        """Number of coordinates of all arrays."""
        return sum(int(np.prod(shape, dtype=np.int64)) for shape in self.shapes)

    @property
    def size(self) -> int:
        """Length of an encoded vector: every coordinate, then one weight per array."""
        return self.values + len(self.names)

    def slots(self) -> Iterator[tuple[int, str, slice, tuple[int, ...]]]:
        """``(index, name, coordinates, shape)`` of each array in the encoded vector."""
        start = 0
        for index, (name, shape) in enumerate(zip(self.names, self.shapes, strict=True)):
            end = start + int(np.prod(shape, dtype=np.int64))
            yield index, name, slice(start, end), shape
            start = end


def encode(layout: Layout, updates: Mapping[str, np.ndarray], weight: int, clip_range: float) -> np.ndarray:
    """One client's weighted updates as a ``uint64`` vector of ``layout.size``.

    Parameters
    ----------
    layout : Layout
        The round's arrays.
    updates : mapping of str to ndarray
        The client's update of each array it uploads (a subset of the layout).
    weight : int
        Its weight (number of examples), from 0 to 2^32 - 1.
    clip_range : float
        Updates are clipped to ``[-clip_range, clip_range]`` per coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> layout = Layout.of({"w": np.zeros(2)})
    >>> vector = encode(layout, {"w": np.array([0.5, -0.25])}, 3, 1.0)
    >>> sums, weights = decode(layout, vector, 1.0)
    >>> sums["w"].tolist(), weights["w"]
    ([1.5, -0.75], 3)
    """
    if not 0 <= weight < MAX_TOTAL_WEIGHT:
        raise ValueError(f"weight must be in [0, 2^32), got {weight}")
    unknown = sorted(set(updates) - set(layout.names))
    if unknown:
        raise ValueError(f"arrays {unknown} are not in the round's layout")
    scale = STEPS / clip_range
    vector = np.zeros(layout.size, dtype=np.int64)
    for index, name, coordinates, shape in layout.slots():
        if name not in updates:
            continue
        update = np.asarray(updates[name], dtype=np.float64)
        if update.shape != shape:
            raise ValueError(f"array {name!r}: shape {update.shape}, expected {shape}")
        steps = np.rint(np.clip(update, -clip_range, clip_range) * scale).astype(np.int64)
        vector[coordinates] = steps.reshape(-1) * weight
        vector[layout.values + index] = weight
    return vector.view(np.uint64)


def decode(layout: Layout, total: np.ndarray, clip_range: float) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The weighted sum of updates and the total weight of each array, from the sum of encoded vectors.

    Raises
    ------
    ValueError
        If an array's total weight reaches 2^32 (its sum may have wrapped).
    """
    weights = {name: int(total[layout.values + index]) for index, name, _, _ in layout.slots()}
    heavy = sorted(name for name, weight in weights.items() if weight >= MAX_TOTAL_WEIGHT)
    if heavy:
        raise ValueError(f"arrays {heavy}: total weight reaches 2^32, beyond exact fixed-point sums")
    values = np.asarray(total[: layout.values], dtype=np.uint64).view(np.int64).astype(np.float64)
    values *= clip_range / STEPS
    sums = {name: values[coordinates].reshape(shape) for _, name, coordinates, shape in layout.slots()}
    return sums, weights
