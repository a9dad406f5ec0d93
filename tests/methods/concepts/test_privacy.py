"""Randomized response on local graphs: three states per pair, eps-local DP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedmosaic.methods.concepts.graph import ConfidenceMatrix
from fedmosaic.methods.concepts.privacy import most_believed_states, randomized_response

NAMES = tuple("abcdef")


def _matrix() -> ConfidenceMatrix:
    return ConfidenceMatrix.from_dag(NAMES, [("a", "b"), ("c", "b"), ("d", "e"), ("f", "a")])


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_each_state_is_kept_and_flipped_with_the_randomized_response_probabilities(epsilon: float) -> None:
    # Prepare
    truth = most_believed_states(_matrix())
    rng = np.random.default_rng(0)

    # Execute: many reports
    reports = np.stack([most_believed_states(randomized_response(_matrix(), epsilon, rng)) for _ in range(4000)])

    # Assert: P(keep) = e^eps / (e^eps + 2); each other state 1 / (e^eps + 2)
    keep = math.exp(epsilon) / (math.exp(epsilon) + 2)
    assert (reports == truth).mean() == pytest.approx(keep, abs=0.01)
    for other in (1, 2):
        assert (reports == (truth + other) % 3).mean() == pytest.approx((1 - keep) / 2, abs=0.01)


def test_the_report_is_a_valid_zero_one_matrix_and_large_epsilon_keeps_the_graph() -> None:
    report = randomized_response(_matrix(), 40.0, np.random.default_rng(1))
    assert set(np.unique(report.values)) <= {0.0, 1.0}
    np.testing.assert_array_equal(report.values, _matrix().values)


def test_epsilon_must_be_positive() -> None:
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        randomized_response(_matrix(), 0.0, np.random.default_rng(0))
