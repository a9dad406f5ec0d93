"""Simpson-MNIST's colours: each client's rule from label to shade, and shades to RGB.

Also the coarsened digits the colour is laid over, and how strongly a set of
shades tracks the labels. :mod:`fedmosaic.data.simpson` builds the dataset
from these.
"""

from __future__ import annotations

import numpy as np
import torch

from fedmosaic.errors import FedmosaicError

ONE_SHARE_RANGE: tuple[float, float] = (0.1, 0.9)
"""Share of 1s in the darkest and in the lightest client; linear in between."""
DARK = np.array([0.35, 0.10, 0.05], dtype=np.float32)
"""RGB colour of shade 0."""
LIGHT = np.array([1.00, 0.90, 0.60], dtype=np.float32)
"""RGB colour of shade 1."""


def rule_shades(
    clients: np.ndarray, labels: np.ndarray, num_clients: int, design: str, uniform: np.ndarray
) -> np.ndarray:
    """The shade client ``k``'s colour rule gives a digit of label ``y``, from a uniform draw ``u``.

    ``conflicting``: ``(k + y + u) / (K + 1)``; ``bands``: ``(k + y/2 + u/2) / K``.

    Parameters
    ----------
    clients : np.ndarray
        The client ``k`` whose rule applies, per sample.
    labels : np.ndarray
        Label ``y`` (0 for digit 1, 1 for digit 7), per sample.
    num_clients : int
        ``K``.
    design : {"conflicting", "bands"}
        The design.
    uniform : np.ndarray
        ``u`` in ``[0, 1)``, per sample.

    Returns
    -------
    np.ndarray
        float64 shades in ``[0, 1)``.

    Examples
    --------
    >>> rule_shades(np.array([1, 1]), np.array([0, 1]), 5, "conflicting", np.array([0.5, 0.5])).round(3).tolist()
    [0.25, 0.417]
    >>> rule_shades(np.array([1, 1]), np.array([0, 1]), 5, "bands", np.array([0.5, 0.5])).round(3).tolist()
    [0.25, 0.35]
    """
    shades: np.ndarray = (
        (clients + labels + uniform) / (num_clients + 1)
        if design == "conflicting"
        else (clients + 0.5 * labels + 0.5 * uniform) / num_clients
    )
    return shades


def one_shares(num_clients: int) -> np.ndarray:
    """Share of 1s (label 0) in each client, rising linearly from 0.1 to 0.9.

    Parameters
    ----------
    num_clients : int
        Number of clients, >= 2.

    Returns
    -------
    np.ndarray
        float64, shape ``(num_clients,)``, darkest client first.

    Examples
    --------
    >>> one_shares(5).round(2).tolist()
    [0.1, 0.3, 0.5, 0.7, 0.9]
    """
    return np.linspace(*ONE_SHARE_RANGE, num_clients)


def shade_colour(shades: np.ndarray) -> np.ndarray:
    """The RGB colour of each shade: ``DARK + s (LIGHT - DARK)``.

    Parameters
    ----------
    shades : np.ndarray
        Shades in ``[0, 1]``, shape ``(n,)``.

    Returns
    -------
    np.ndarray
        float32, shape ``(n, 3)``.

    Examples
    --------
    >>> shade_colour(np.array([0.0, 1.0])).tolist() == [DARK.tolist(), LIGHT.tolist()]
    True
    """
    return (DARK + np.asarray(shades, dtype=np.float32)[:, None] * (LIGHT - DARK)).astype(np.float32)


def coarsened(images: np.ndarray, resolution: int) -> np.ndarray:
    """Average images down to ``resolution x resolution`` pixels and scale them back up.

    Down-sampling averages over adaptive pooling windows; up-sampling repeats
    each coarse pixel (nearest neighbour), so the result has the input's
    shape and dtype and keeps its mean brightness roughly unchanged.

    Parameters
    ----------
    images : np.ndarray
        Images ``(n, channels, H, W)``.
    resolution : int
        Coarse side in pixels, from 1 to ``min(H, W)``.

    Returns
    -------
    np.ndarray
        The coarsened images, same shape and dtype.

    Examples
    --------
    >>> import numpy as np
    >>> image = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> coarsened(image, 2)[0, 0].tolist()[0]
    [2.5, 2.5, 4.5, 4.5]
    """
    tensor = torch.from_numpy(np.ascontiguousarray(images))
    coarse = torch.nn.functional.adaptive_avg_pool2d(tensor, resolution)
    fine = torch.nn.functional.interpolate(coarse, size=tuple(images.shape[-2:]), mode="nearest")
    return fine.numpy().astype(images.dtype, copy=False)


def shade_label_correlation(shades: np.ndarray, labels: np.ndarray) -> float:
    """Pearson correlation between shade and label (positive: 7s are lighter).

    Parameters
    ----------
    shades : np.ndarray
        Shade of each sample, shape ``(n,)``.
    labels : np.ndarray
        Label of each sample, shape ``(n,)``.

    Returns
    -------
    float
        In ``[-1, 1]``.

    Raises
    ------
    FedmosaicError
        If the lengths differ or either array is constant (the correlation
        is then undefined).

    Examples
    --------
    >>> import numpy as np
    >>> shade_label_correlation(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1])) > 0.9
    True
    """
    s = np.asarray(shades, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.shape != y.shape or s.ndim != 1:
        raise FedmosaicError(f"shades and labels must be 1-D of the same length (got {s.shape} and {y.shape})")
    s, y = s - s.mean(), y - y.mean()
    scale = np.sqrt((s @ s) * (y @ y))
    if scale == 0:
        raise FedmosaicError("the correlation needs shades and labels that both vary (one is constant)")
    return float((s @ y) / scale)
