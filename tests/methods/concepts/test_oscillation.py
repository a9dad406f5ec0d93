"""The period-2 oscillation detector, on hand-made validation-loss histories."""

from __future__ import annotations

import numpy as np

from fedmosaic.methods.concepts.oscillation import ROUNDS, TOLERANCE, alternating_rounds, oscillates

SWINGING = [0.88, 0.87, 0.90, 0.87, 0.91, 0.89, 0.94, 0.88, 0.93, 0.91, 0.94, 0.90, 0.95, 0.92]
"""A history like insurance CGM's from round 12 on: rising, and high and low by turns."""


def test_a_loss_that_swings_high_and_low_by_turns_oscillates() -> None:
    # Execute / Assert
    assert alternating_rounds(SWINGING) == len(SWINGING) - 2
    assert oscillates(SWINGING)


def test_a_loss_that_falls_then_flattens_does_not_oscillate() -> None:
    # Prepare
    falling = [1.3, 1.2, 1.1, 1.0, 0.92, 0.88, 0.86, 0.85, 0.85, 0.84, 0.84, 0.845, 0.84, 0.85]

    # Execute / Assert: only the bend at 0.92 stands out from its neighbours
    assert alternating_rounds(falling) == 1
    assert not oscillates(falling)


def test_small_noise_around_a_trend_does_not_oscillate() -> None:
    # Prepare: swings below the tolerance, high and low by turns for 40 rounds
    noisy = [0.9 - 0.002 * t + 0.4 * TOLERANCE * (-1) ** t for t in range(40)]

    # Execute / Assert
    assert alternating_rounds(noisy) == 0


def test_independent_noise_under_the_tolerance_rarely_alternates_long_enough() -> None:
    # Prepare: 200 histories of 60 rounds of independent noise of half the tolerance
    # (noise as large as the tolerance does alternate: it is high and low by turns more often than not)
    rng = np.random.default_rng(0)
    histories = 0.9 + 0.5 * TOLERANCE * rng.standard_normal((200, 60))

    # Execute
    flagged = sum(oscillates(list(h)) for h in histories)

    # Assert: under 5% false alarms
    assert flagged < 10


def test_one_spike_is_not_an_oscillation() -> None:
    # Prepare
    spiked = [0.9] * 6 + [1.2] + [0.9] * 6

    # Execute / Assert
    assert alternating_rounds(spiked) == 3
    assert not oscillates(spiked)


def test_a_swing_that_stops_is_counted_only_while_it_lasts() -> None:
    # Prepare: 7 rounds of alternation, a steady stretch, then 5 more
    history = SWINGING[:7] + [0.9] * 5 + [0.9 + 0.05 * (-1) ** t for t in range(5)]

    # Execute
    rounds = alternating_rounds(history)

    # Assert: the two stretches are not added up
    assert alternating_rounds(SWINGING[:7]) == 5
    assert rounds < ROUNDS
