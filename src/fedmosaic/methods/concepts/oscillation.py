"""Detect a period-2 oscillation in a per-round series (a run's validation task loss).

A federation whose global model swings between two states from one round to
the next shows it in its validation loss: high, low, high, low. A round is
*high* when its value exceeds the mean of its two neighbours by at least a
tolerance, *low* when it falls short of it by as much; an oscillation is a
stretch of consecutive rounds that alternate high and low. Noise alternates
too, but rarely for long and rarely by much, so the detector asks for a long
enough stretch of large enough swings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TOLERANCE = 0.01
"""Smallest swing above or below the neighbours' mean that counts (in the series' units; cross-entropy here)."""

ROUNDS = 8
"""Consecutive alternating rounds that make an oscillation (steady but noisy runs of the F-CMs table reach up to 7)."""


def alternating_rounds(series: Sequence[float], tolerance: float = TOLERANCE) -> int:
    """The longest stretch of consecutive rounds that alternate high and low around their neighbours.

    Parameters
    ----------
    series : sequence of float
        One value per round, in order (missing rounds left out).
    tolerance : float, default 0.01
        A round counts as high (low) when it is at least this much above
        (below) the mean of the rounds before and after it.

    Returns
    -------
    int
        The number of rounds in the longest such stretch (0 if none).

    Examples
    --------
    >>> alternating_rounds([1.0, 0.9, 1.0, 0.9, 1.0, 0.9])
    4
    >>> alternating_rounds([1.0, 0.9, 0.8, 0.7, 0.6])
    0
    """
    values = np.asarray(series, dtype=np.float64)
    if len(values) < 3:
        return 0
    swing = values[1:-1] - (values[:-2] + values[2:]) / 2
    side = np.where(swing >= tolerance, 1, np.where(swing <= -tolerance, -1, 0))
    longest = current = 0
    for index, value in enumerate(side):
        if value == 0:
            current = 0
        elif current and side[index - 1] == -value:
            current += 1
        else:
            current = 1
        longest = max(longest, current)
    return longest


def oscillates(series: Sequence[float], rounds: int = ROUNDS, tolerance: float = TOLERANCE) -> bool:
    """Whether ``series`` holds a period-2 oscillation of at least ``rounds`` rounds.

    Examples
    --------
    >>> oscillates([0.9 + 0.03 * (-1) ** t for t in range(14)])
    True
    >>> oscillates([0.9 - 0.01 * t for t in range(14)])
    False
    """
    return alternating_rounds(series, tolerance) >= rounds
