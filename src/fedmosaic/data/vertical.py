"""Vertical partitioning: which features (columns) each party holds.

Every function returns one sorted int64 array of column positions per party;
the parties' arrays are disjoint, cover every column and are never empty.
"""

import math
from collections.abc import Sequence

import numpy as np

from fedmosaic.errors import ConfigError


def even_column_blocks(num_features: int, num_parties: int) -> list[np.ndarray]:
    """Cut the columns into contiguous blocks of equal width (within one column).

    Parameters
    ----------
    num_features : int
        Number of columns.
    num_parties : int
        Number of parties, from 1 to ``num_features``.

    Returns
    -------
    list[np.ndarray]
        Column positions of each party, in order.

    Raises
    ------
    ConfigError
        If ``num_parties`` is out of range (field ``vertical.num_parties``).

    Examples
    --------
    >>> [block.tolist() for block in even_column_blocks(5, 2)]
    [[0, 1, 2], [3, 4]]
    """
    _check_num_parties(num_parties, num_features)
    return np.array_split(np.arange(num_features, dtype=np.int64), num_parties)


def dirichlet_column_blocks(
    num_features: int,
    num_parties: int,
    alpha: float,
    rng: np.random.Generator,
    importance: Sequence[float] | None = None,
) -> list[np.ndarray]:
    """Split the columns by VertiBench's importance splitter (Wu et al., 2024).

    Party weights are drawn from a Dirichlet distribution with concentration
    ``alpha * num_parties * importance / sum(importance)`` (symmetric
    Dirichlet(``alpha``) when ``importance`` is ``None``); ``alpha = math.inf``
    takes the weights to be the normalised importance itself. Each party first
    gets one random column; every other column then goes to a party drawn with
    those weights. Small ``alpha`` makes a few parties hold most columns.

    Parameters
    ----------
    num_features : int
        Number of columns.
    num_parties : int
        Number of parties, from 1 to ``num_features``.
    alpha : float
        Concentration, > 0; ``math.inf`` for fixed weights.
    rng : np.random.Generator
        Source of randomness.
    importance : Sequence[float] or None, optional
        Expected relative share of each party, one positive number per
        party; equal shares when ``None``.

    Returns
    -------
    list[np.ndarray]
        Sorted column positions of each party.

    Raises
    ------
    ConfigError
        If ``num_parties`` (field ``vertical.num_parties``), ``alpha``
        (``vertical.alpha``) or ``importance`` (``vertical.importance``) is invalid.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> blocks = dirichlet_column_blocks(12, 3, math.inf, np.random.default_rng(0))
    >>> sorted(np.concatenate(blocks).tolist()) == list(range(12))
    True
    """
    _check_num_parties(num_parties, num_features)
    if not alpha > 0:
        raise ConfigError("vertical.alpha", f"must be > 0, or inf for equal weights (got {alpha})")
    shares = _normalised_importance(importance, num_parties)
    weights = shares if math.isinf(alpha) else rng.dirichlet(alpha * num_parties * shares)
    owner = rng.choice(num_parties, size=num_features, p=weights / weights.sum())
    owner[rng.choice(num_features, size=num_parties, replace=False)] = np.arange(num_parties)
    return [np.flatnonzero(owner == party) for party in range(num_parties)]


def image_patch_blocks(height: int, width: int, num_parties: int) -> list[np.ndarray]:
    """Cut an image into a grid of patches, one per party.

    The grid has ``rows x cols = num_parties`` with ``rows <= cols`` as close
    to square as possible (2 -> 1x2, 4 -> 2x2, 6 -> 2x3, 8 -> 2x4); rows split
    the height and columns the width into near-equal bands. Pixels are
    numbered row-major, ``r * width + c``, as in a flattened image.

    Parameters
    ----------
    height : int
        Image height in pixels.
    width : int
        Image width in pixels.
    num_parties : int
        An even number >= 2 whose grid fits in the image.

    Returns
    -------
    list[np.ndarray]
        Sorted flat pixel positions of each patch, patches in row-major order.

    Raises
    ------
    ConfigError
        If ``num_parties`` is odd, below 2, or gives a grid larger than the
        image (field ``vertical.num_parties``).

    Examples
    --------
    >>> [patch.tolist() for patch in image_patch_blocks(2, 4, 2)]
    [[0, 1, 4, 5], [2, 3, 6, 7]]
    """
    if num_parties < 2 or num_parties % 2:
        raise ConfigError("vertical.num_parties", f"must be an even number >= 2 for image patches (got {num_parties})")
    rows = max(r for r in range(1, math.isqrt(num_parties) + 1) if num_parties % r == 0)
    cols = num_parties // rows
    if rows > height or cols > width:
        raise ConfigError(
            "vertical.num_parties",
            f"a {rows}x{cols} grid of patches does not fit a {height}x{width} image (got {num_parties})",
        )
    pixels = np.arange(height * width, dtype=np.int64).reshape(height, width)
    return [
        patch.ravel() for band in np.array_split(pixels, rows, axis=0) for patch in np.array_split(band, cols, axis=1)
    ]


def block_image_shape(positions: np.ndarray, image: tuple[int, int]) -> tuple[int, int, int] | None:
    """The ``(1, rows, cols)`` shape of a party's pixels when they are a rectangle of a one-channel image, else None.

    Parameters
    ----------
    positions : numpy.ndarray
        Sorted flat pixel positions (row-major, as :func:`image_patch_blocks` gives them).
    image : (int, int)
        The image's height and width.

    Examples
    --------
    >>> [block_image_shape(patch, (2, 4)) for patch in image_patch_blocks(2, 4, 2)]
    [(1, 2, 2), (1, 2, 2)]
    >>> block_image_shape(np.array([0, 5]), (2, 4)) is None
    True
    """
    height, width = image
    if len(positions) == 0 or positions[-1] >= height * width:
        return None
    rows, cols = np.unique(positions // width), np.unique(positions % width)
    rectangle = np.add.outer(rows * width, cols).ravel()
    contiguous = np.all(np.diff(rows) == 1) and np.all(np.diff(cols) == 1)
    if not contiguous or not np.array_equal(rectangle, positions):
        return None
    return (1, len(rows), len(cols))


def _check_num_parties(num_parties: int, num_features: int) -> None:
    if not 1 <= num_parties <= num_features:
        raise ConfigError(
            "vertical.num_parties",
            f"must be >= 1 and <= the number of features, {num_features} (got {num_parties})",
        )


def _normalised_importance(importance: Sequence[float] | None, num_parties: int) -> np.ndarray:
    if importance is None:
        return np.full(num_parties, 1 / num_parties)
    values = np.asarray(importance, dtype=np.float64)
    if values.shape != (num_parties,) or not np.all(np.isfinite(values) & (values > 0)):
        raise ConfigError(
            "vertical.importance",
            f"must be {num_parties} finite numbers > 0, one per party (got {list(importance)})",
        )
    shares: np.ndarray = values / values.sum()
    return shares
