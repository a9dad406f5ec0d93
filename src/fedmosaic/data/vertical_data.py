"""A vertical task's data: per-party column blocks, who holds which row, and the few labels.

Rows a party does not hold are NaN in its block, so that any method reading
them by mistake fails loudly instead of silently using data nobody has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from fedmosaic.data.missingness import Missingness, draw_mask
from fedmosaic.errors import FedmosaicError

Likelihood = Literal["gaussian", "bernoulli"]
UNLABELED = -1


@dataclass(frozen=True, eq=False)
class VerticalSplit:
    """One split (train or test) of a vertical task.

    Parameters
    ----------
    blocks : list of numpy.ndarray
        Party ``k``'s features, float32 of shape ``(n, d_k)``; NaN in the rows
        it does not hold.
    present : numpy.ndarray
        bool ``(n, K)``: whether party ``k`` holds row ``i``; at least one
        True per row.
    y : numpy.ndarray
        int64 ``(n,)``: the class, or ``UNLABELED`` (-1).
    """

    blocks: list[np.ndarray]
    present: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.y)
        if self.present.shape != (n, len(self.blocks)) or self.present.dtype != np.bool_:
            raise FedmosaicError(f"present must be bool of shape ({n}, {len(self.blocks)}), got {self.present.shape}")
        if not self.present.any(axis=1).all():
            raise FedmosaicError("every row needs at least one present party")
        for k, block in enumerate(self.blocks):
            if block.shape[0] != n or block.dtype != np.float32:
                raise FedmosaicError(f"block {k} must be float32 with {n} rows, got {block.dtype} {block.shape}")

    def __len__(self) -> int:
        return len(self.y)

    @property
    def labeled(self) -> np.ndarray:
        """Positions of the labeled rows."""
        return np.flatnonzero(self.y != UNLABELED)


@dataclass(frozen=True, eq=False)
class VerticalData:
    """Train and test splits of a vertical task.

    Parameters
    ----------
    train : VerticalSplit
        Labels only where the active party (0) is present, within the budget.
    tests : dict of str to VerticalSplit
        The test rows under each test-time missingness, by its label
        (``MCAR 0``, ``MNAR 9``); every row labeled. The first is the headline.
    num_classes : int
        Number of classes.
    likelihood : {"gaussian", "bernoulli"}
        How features are modelled: real values or pixels in [0, 1].
    """

    train: VerticalSplit
    tests: dict[str, VerticalSplit]
    num_classes: int
    likelihood: Likelihood

    @property
    def splits(self) -> dict[str, VerticalSplit]:
        """Every split by the name messages use: ``train`` and the test labels."""
        return {"train": self.train, **self.tests}

    @property
    def num_parties(self) -> int:
        """K, the active party included."""
        return len(self.train.blocks)

    @property
    def widths(self) -> list[int]:
        """Number of features of each party."""
        return [block.shape[1] for block in self.train.blocks]


def test_metric(label: str, metric: str = "accuracy") -> str:
    """The metric name of one test setting.

    Examples
    --------
    >>> test_metric("MCAR 0")
    'accuracy_mcar0'
    """
    return f"{metric}_{label.lower().replace(' ', '')}"


def vertical_split(
    x: np.ndarray,
    y: np.ndarray,
    columns: list[np.ndarray],
    missingness: Missingness,
    rng: np.random.Generator,
    label_budget: int | None = None,
) -> VerticalSplit:
    """Cut ``x`` into party blocks, draw who holds which row, and keep a budget of labels.

    Parameters
    ----------
    x : numpy.ndarray
        float32 ``(n, d)`` complete features.
    y : numpy.ndarray
        int64 ``(n,)`` classes.
    columns : list of numpy.ndarray
        Column positions of each party (``fedmosaic.data.vertical``).
    missingness : Missingness
        How blocks go missing.
    rng : numpy.random.Generator
        Source of the mask and of the labeled rows.
    label_budget : int or None, default None
        Keep labels for this many rows, drawn uniformly among the rows the
        active party holds (all of them when fewer); ``None`` keeps every
        label (test splits).

    Returns
    -------
    VerticalSplit
    """
    complete = [np.ascontiguousarray(x[:, cols], dtype=np.float32) for cols in columns]
    present = draw_mask(complete, missingness, rng)
    blocks = [np.where(present[:, [k]], block, np.float32(np.nan)) for k, block in enumerate(complete)]
    labels = y.astype(np.int64).copy()
    if label_budget is not None:
        candidates = np.flatnonzero(present[:, 0])
        keep = rng.choice(candidates, size=min(label_budget, len(candidates)), replace=False)
        labels = np.full(len(y), UNLABELED, dtype=np.int64)
        labels[keep] = y[keep]
    return VerticalSplit(blocks=blocks, present=present, y=labels)
