"""In-memory labelled datasets: features and integer class labels."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedmosaic.errors import FedmosaicError


@dataclass(frozen=True, eq=False)
class ArrayDataset:
    """Samples held as NumPy arrays.

    Parameters
    ----------
    x : np.ndarray
        Features, float32, shape ``(n, ...)`` with at least two dimensions.
    y : np.ndarray
        Class labels, int64, shape ``(n,)``, each in ``[0, num_classes)``.
    num_classes : int
        Number of classes of the task (some may be absent from ``y``).

    Raises
    ------
    FedmosaicError
        If the dtypes, shapes or label range are not as described.

    Examples
    --------
    >>> import numpy as np
    >>> data = ArrayDataset(np.zeros((3, 2), np.float32), np.array([0, 1, 1]), num_classes=2)
    >>> len(data), data.subset(np.array([2])).y.tolist()
    (3, [1])
    """

    x: np.ndarray
    y: np.ndarray
    num_classes: int

    def __post_init__(self) -> None:
        if self.x.dtype != np.float32 or self.x.ndim < 2:
            raise FedmosaicError(
                f"ArrayDataset.x must be a float32 array of shape (n, ...) (got {self.x.dtype} of shape {self.x.shape})"
            )
        if self.y.dtype != np.int64 or self.y.ndim != 1:
            raise FedmosaicError(
                f"ArrayDataset.y must be an int64 array of shape (n,) (got {self.y.dtype} of shape {self.y.shape})"
            )
        if len(self.x) != len(self.y):
            raise FedmosaicError(
                f"ArrayDataset.x and ArrayDataset.y must have the same length (got {len(self.x)} and {len(self.y)})"
            )
        if self.num_classes < 1:
            raise FedmosaicError(f"ArrayDataset.num_classes must be >= 1 (got {self.num_classes})")
        if len(self.y) and (self.y.min() < 0 or self.y.max() >= self.num_classes):
            raise FedmosaicError(
                f"ArrayDataset.y must lie in [0, {self.num_classes}) (got values from {self.y.min()} to {self.y.max()})"
            )

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, indices: npt.ArrayLike) -> "ArrayDataset":
        """Select samples by position.

        Parameters
        ----------
        indices : array_like of int
            Positions of the samples to keep, in the order to keep them.

        Returns
        -------
        ArrayDataset
            A new dataset holding copies of the selected rows.

        Examples
        --------
        >>> import numpy as np
        >>> data = ArrayDataset(np.arange(4, dtype=np.float32).reshape(4, 1), np.arange(4), 4)
        >>> data.subset([3, 0]).x.ravel().tolist()
        [3.0, 0.0]
        """
        rows = np.asarray(indices, dtype=np.int64)
        return ArrayDataset(self.x[rows], self.y[rows], self.num_classes)

    def partitioned(self, parts: Sequence[npt.ArrayLike]) -> list["ArrayDataset"]:
        """Split the samples into parts that are views of one block, not copies.

        The selected rows are gathered once, part after part, into one block;
        each part is a view (a slice) of it, holding the same samples in the
        same order as :meth:`subset` would. However many parts there are, the
        memory used is that of the selected rows once.

        Parameters
        ----------
        parts : sequence of array_like of int
            Positions of each part's samples.

        Returns
        -------
        list of ArrayDataset
            One dataset per part, sharing the block's memory.

        Examples
        --------
        >>> import numpy as np
        >>> data = ArrayDataset(np.arange(4, dtype=np.float32).reshape(4, 1), np.arange(4), 4)
        >>> a, b = data.partitioned([[3], [0, 2]])
        >>> b.x.ravel().tolist(), np.shares_memory(a.x, b.x.base)
        ([0.0, 2.0], True)
        """
        rows = [np.asarray(part, dtype=np.int64) for part in parts]
        block = self.subset(np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))
        ends = np.cumsum([len(r) for r in rows])
        return [
            ArrayDataset(block.x[end - len(r) : end], block.y[end - len(r) : end], self.num_classes)
            for r, end in zip(rows, ends, strict=True)
        ]


@dataclass(frozen=True, eq=False)
class DatasetSplits:
    """The train and test parts of one dataset.

    Parameters
    ----------
    train : ArrayDataset
        Samples to learn from.
    test : ArrayDataset
        Held-out samples, with the same sample shape and number of classes.
    name : str
        Name of the dataset, e.g. ``"mnist"``.

    Raises
    ------
    FedmosaicError
        If ``train`` and ``test`` differ in sample shape or number of classes.

    Examples
    --------
    >>> import numpy as np
    >>> part = ArrayDataset(np.zeros((2, 3), np.float32), np.array([0, 1]), num_classes=2)
    >>> DatasetSplits(train=part, test=part, name="toy").name
    'toy'
    """

    train: ArrayDataset
    test: ArrayDataset
    name: str

    def __post_init__(self) -> None:
        if self.train.x.shape[1:] != self.test.x.shape[1:]:
            raise FedmosaicError(
                f"DatasetSplits {self.name!r}: train and test samples must have the same shape "
                f"(got {self.train.x.shape[1:]} and {self.test.x.shape[1:]})"
            )
        if self.train.num_classes != self.test.num_classes:
            raise FedmosaicError(
                f"DatasetSplits {self.name!r}: train and test must have the same num_classes "
                f"(got {self.train.num_classes} and {self.test.num_classes})"
            )
