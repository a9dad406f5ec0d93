"""A vertical task's data: per-party column blocks, who holds which row, and the few labels.

Rows a party does not hold are NaN in its block, so that any method reading
them by mistake fails loudly instead of silently using data nobody has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fedmosaic.data.missingness import MaskModel, Missingness, draw_mask
from fedmosaic.errors import FedmosaicError

Likelihood = Literal["gaussian", "bernoulli"]
Shape = tuple[int, ...]
"""The shape of one example of a party's block (its columns are that array, flattened)."""
UNLABELED = -1
VALIDATION = "validation"
"""The name messages use for the validation split."""


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
        Labels on a budget of rows (among those the active party holds, by default).
    tests : dict of str to VerticalSplit
        The test rows under each test-time missingness, by its label
        (``MCAR 0``, ``MNAR 9``); every row labeled. The first is the headline.
    num_classes : int
        Number of classes.
    likelihood : {"gaussian", "bernoulli"}
        How features are modelled: real values or pixels in [0, 1].
    validation : VerticalSplit or None, default None
        Labeled training rows held out for model selection and early stopping
        (:func:`hold_out_validation`); their labels are not in ``train``.
    shapes : tuple of Shape or None, default None
        Each party's block as an array (an image patch: ``(1, height,
        width)``), whose flattening its columns are; None: every block is a
        vector of its columns. A party's own encoder is built on its shape.
    """

    train: VerticalSplit
    tests: dict[str, VerticalSplit]
    num_classes: int
    likelihood: Likelihood
    validation: VerticalSplit | None = None
    shapes: tuple[Shape, ...] | None = None

    def __post_init__(self) -> None:
        if self.shapes is not None and [math.prod(shape) for shape in self.shapes] != self.widths:
            raise FedmosaicError(f"shapes {list(self.shapes)} do not flatten to the blocks' widths {self.widths}")

    @property
    def splits(self) -> dict[str, VerticalSplit]:
        """Every split by the name messages use: ``train``, ``validation`` if any, and the test labels."""
        held_out = {VALIDATION: self.validation} if self.validation is not None else {}
        return {"train": self.train, **held_out, **self.tests}

    @property
    def num_parties(self) -> int:
        """K, the active party included."""
        return len(self.train.blocks)

    @property
    def widths(self) -> list[int]:
        """Number of features of each party."""
        return [block.shape[1] for block in self.train.blocks]

    @property
    def party_shapes(self) -> list[Shape]:
        """Each party's example shape: ``shapes``, or its columns as a vector."""
        return list(self.shapes) if self.shapes is not None else [(width,) for width in self.widths]


def card_shapes(data: VerticalData) -> dict[str, list[list[int]]]:
    """A model card's ``shapes`` of ``data``'s parties, where its blocks have shapes (nothing when every block is a vector).

    Examples
    --------
    >>> split = VerticalSplit([np.zeros((1, 4), np.float32)], np.ones((1, 1), bool), np.array([0]))
    >>> card_shapes(VerticalData(split, {}, 2, "bernoulli", shapes=((1, 2, 2),)))
    {'shapes': [[1, 2, 2]]}
    """
    return {} if data.shapes is None else {"shapes": [list(shape) for shape in data.shapes]}


def test_metric(label: str, metric: str = "accuracy") -> str:  # noqa: PT028 - not a test: names a test metric
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
    mechanism: MaskModel | None = None,
    label_rows: Literal["active", "all"] = "active",
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
        Keep labels for this many rows, drawn uniformly among the
        ``label_rows`` (all of them when fewer); ``None`` keeps every label
        (test splits).
    mechanism : MaskModel or None, default None
        The fitted MCAR, MAR or MNAR mechanism to draw the mask from (the one
        shared by training and test rows); None fits it on ``x`` itself.
    label_rows : {"active", "all"}, default "active"
        Draw the labeled rows among those the active party holds, or among all rows.

    Returns
    -------
    VerticalSplit
    """
    complete = column_blocks(x, columns)
    present = draw_mask(complete, missingness, rng, mechanism)
    blocks = [np.where(present[:, [k]], block, np.float32(np.nan)) for k, block in enumerate(complete)]
    labels = y.astype(np.int64).copy()
    if label_budget is not None:
        candidates = np.flatnonzero(present[:, 0]) if label_rows == "active" else np.arange(len(y))
        keep = rng.choice(candidates, size=min(label_budget, len(candidates)), replace=False)
        labels = np.full(len(y), UNLABELED, dtype=np.int64)
        labels[keep] = y[keep]
    return VerticalSplit(blocks=blocks, present=present, y=labels)


def column_blocks(x: np.ndarray, columns: list[np.ndarray]) -> list[np.ndarray]:
    """The complete float32 block of each party."""
    return [np.ascontiguousarray(x[:, cols], dtype=np.float32) for cols in columns]


def hold_out_validation(
    train: VerticalSplit, fraction: float, rng: np.random.Generator
) -> tuple[VerticalSplit, VerticalSplit | None]:
    """Hold out ``fraction`` of the labeled rows (rounded, at least one when any) for validation.

    The held-out rows stay in the training split, unlabeled (their features
    are training data any method may use without labels); the validation
    split holds those rows with their labels.

    Parameters
    ----------
    train : VerticalSplit
        The training split.
    fraction : float
        Share of the labeled rows held out, in [0, 1); 0 holds out none.
    rng : numpy.random.Generator
        Source of the choice of rows.

    Returns
    -------
    (VerticalSplit, VerticalSplit or None)
        The training split without the held-out labels, and the validation split
        (None when nothing is held out).

    Examples
    --------
    >>> split = VerticalSplit([np.zeros((4, 1), np.float32)], np.ones((4, 1), bool), np.array([0, 1, 0, -1]))
    >>> kept, validation = hold_out_validation(split, 0.5, np.random.default_rng(0))
    >>> len(kept.labeled), len(validation)
    (1, 2)
    """
    labeled = train.labeled
    count = min(len(labeled), max(1, round(fraction * len(labeled)))) if fraction > 0 and len(labeled) else 0
    if count == 0:
        return train, None
    rows = np.sort(rng.choice(labeled, size=count, replace=False))
    y = train.y.copy()
    y[rows] = UNLABELED
    validation = VerticalSplit([block[rows] for block in train.blocks], train.present[rows], train.y[rows])
    return VerticalSplit(train.blocks, train.present, y), validation
