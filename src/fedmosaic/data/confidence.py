"""A client's beliefs about the causal edges among its concepts (F-CMs).

A :class:`ConfidenceMatrix` ``A`` states, for each ordered pair of concepts,
the belief ``A[i, j]`` in the edge ``i -> j``; ``1 - A[i, j] - A[j, i]`` is the
belief that ``i`` and ``j`` are not adjacent. Clients hold one beside their
data (read from a site's belief table or derived from a known DAG); the
server fuses them (:mod:`fedmosaic.methods.concepts.graph`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fedmosaic.errors import FedmosaicError

Edge = tuple[str, str]
"""A directed edge ``(parent, child)`` between two named concepts."""

TIE_ATOL = 1e-9
"""Scores, margins and belief sums closer than this count as equal."""


def check_names(names: tuple[str, ...], owner: str) -> None:
    """Reject names that are not strings or that repeat."""
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise FedmosaicError(f"{owner}: concept names must be strings (got {name!r})")
        if name in seen:
            raise FedmosaicError(f"{owner}: duplicate concept name {name!r}")
        seen.add(name)


def _reject_first(bad: np.ndarray, names: tuple[str, ...], values: np.ndarray, rule: str) -> None:
    """Raise naming the first (row-major) entry flagged in ``bad``."""
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise FedmosaicError(
            f"confidence matrix: belief in edge {names[i]!r} -> {names[j]!r} {rule} (got {float(values[i, j]):.6g})"
        )


def _check_values(names: tuple[str, ...], values: np.ndarray) -> None:
    """Reject a matrix that is not a valid set of per-pair beliefs over ``names``."""
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise FedmosaicError(f"confidence matrix must be square (got shape {values.shape})")
    if values.shape[0] != len(names):
        size = values.shape[0]
        raise FedmosaicError(f"confidence matrix is {size}x{size} but has {len(names)} names")
    _reject_first(~np.isfinite(values), names, values, "must be finite")
    _reject_first((values < 0) | (values > 1), names, values, "must be in [0, 1]")
    _reject_first(np.diag(np.diag(values) != 0), names, values, "must be 0 (no self-loops)")
    both = values + values.T
    bad = np.triu(both > 1 + TIE_ATOL, k=1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        a, b = names[i], names[j]
        raise FedmosaicError(
            f"confidence matrix: beliefs in {a!r} -> {b!r} and {b!r} -> {a!r} sum to "
            f"{float(both[i, j]):.6g} > 1 (the no-edge belief 1 - A_ij - A_ji must be >= 0)"
        )


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (the array itself stays writable)."""
    view = array.view()
    view.setflags(write=False)
    return view


@dataclass(frozen=True, eq=False)
class ConfidenceMatrix:
    """One client's beliefs about the causal edges among its concepts.

    Validated on construction; the stored values are a read-only float copy.

    Parameters
    ----------
    names : tuple of str
        The client's concepts (the task may be one of them), unique.
    values : numpy.ndarray of shape (len(names), len(names))
        ``values[i, j]`` is the belief in the edge ``names[i] -> names[j]``,
        in [0, 1], with a zero diagonal and ``values[i, j] + values[j, i] <= 1``;
        the rest, ``1 - values[i, j] - values[j, i]``, is the belief in no edge.

    Raises
    ------
    FedmosaicError
        With a one-line reason naming the offending pair of concepts and value.

    Examples
    --------
    >>> m = ConfidenceMatrix(("rain", "wet"), np.array([[0.0, 0.5], [0.25, 0.0]]))
    >>> float(1 - m.values[0, 1] - m.values[1, 0])  # belief in "no edge"
    0.25
    """

    names: tuple[str, ...]
    values: np.ndarray

    def __post_init__(self) -> None:
        names = tuple(self.names)
        check_names(names, "confidence matrix")
        try:
            values = np.array(self.values, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise FedmosaicError(f"confidence matrix values must be numbers ({error})") from None
        _check_values(names, values)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "values", read_only(values))

    @classmethod
    def from_dag(cls, names: Iterable[str], edges: Iterable[tuple[str, str]]) -> ConfidenceMatrix:
        """The 0/1 matrix of a DAG restricted to ``names``.

        Parameters
        ----------
        names : iterable of str
            The client's concepts; fixes the order of the rows and columns.
        edges : iterable of (str, str)
            Directed edges ``(source, target)``; those with an endpoint outside
            ``names`` are dropped.

        Examples
        --------
        >>> m = ConfidenceMatrix.from_dag(["a", "b"], [("a", "b"), ("b", "c")])
        >>> m.values.tolist()
        [[0.0, 1.0], [0.0, 0.0]]
        """
        names = tuple(names)
        position = {name: k for k, name in enumerate(names)}
        values = np.zeros((len(names), len(names)))
        for source, target in edges:
            if source in position and target in position:
                values[position[source], position[target]] = 1.0
        return cls(names, values)
