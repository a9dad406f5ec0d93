"""Robust aggregation rules: by name like the mean, resistant to outlying contributions."""

from __future__ import annotations

import numpy as np
import pytest

from fedmosaic.federation.robust import ClippedUpdates, Mean, Median, TrimmedMean, clip_update, module_of


def _parts(values: list[float], name: str = "l.w") -> list[tuple[dict[str, np.ndarray], float]]:
    return [({name: np.array([v, 2 * v], np.float32)}, 1.0) for v in values]


def test_median_and_trimmed_mean_ignore_a_minority_of_huge_values() -> None:
    # Prepare: three honest clients near 1, two sending 1000 times more.
    parts = _parts([0.9, 1.0, 1.1, 1000.0, -1000.0])

    # Execute
    median = Median().aggregate(parts, {}, None)["l.w"]
    trimmed = TrimmedMean(0.2).aggregate(parts, {}, None)["l.w"]
    mean = Mean().aggregate(parts, {}, None)["l.w"]

    # Assert
    np.testing.assert_allclose(median, [1.0, 2.0])
    np.testing.assert_allclose(trimmed, [1.0, 2.0], rtol=1e-6)
    assert median.dtype == np.float32
    np.testing.assert_allclose(mean, [0.6, 1.2], rtol=1e-5)  # here the outliers happen to cancel out


def test_robust_rules_combine_each_name_over_the_contributions_holding_it() -> None:
    # Prepare: only two clients hold "b.w".
    parts = [*_parts([1.0, 2.0, 3.0]), ({"b.w": np.array([5.0])}, 1.0), ({"b.w": np.array([7.0])}, 1.0)]

    # Execute
    for rule in (Median(), TrimmedMean(0.4)):
        out = rule.aggregate(parts, {}, None)

        # Assert
        np.testing.assert_allclose(out["l.w"], [2.0, 4.0])
        np.testing.assert_allclose(out["b.w"], [6.0])


def test_integer_arrays_stay_integers() -> None:
    parts = [({"bn.count": np.array(c, np.int64)}, 1.0) for c in (3, 4, 8)]
    assert Median().aggregate(parts, {}, None)["bn.count"].dtype == np.int64


def test_trimmed_mean_with_no_trim_is_the_unweighted_mean() -> None:
    parts = _parts([1.0, 2.0, 6.0])
    np.testing.assert_allclose(TrimmedMean(0.0).aggregate(parts, {}, None)["l.w"], [3.0, 6.0])


@pytest.mark.parametrize("trim", [-0.1, 0.5, 0.7])
def test_trim_outside_its_range_is_rejected(trim: float) -> None:
    with pytest.raises(ValueError, match="trim must be in"):
        TrimmedMean(trim)


def test_clipping_bounds_each_module_update_separately() -> None:
    # Prepare: module "a" moved by norm 10, module "b" by norm 0.5, bound 1.
    reference = {"a.w": np.zeros(2), "a.b": np.zeros(1), "b.w": np.ones(1)}
    arrays = {"a.w": np.array([6.0, 0.0]), "a.b": np.array([8.0]), "b.w": np.array([1.5])}

    # Execute
    out = clip_update(arrays, reference, 1.0)

    # Assert: a's whole update (both tensors) scaled to norm 1; b untouched.
    np.testing.assert_allclose(out["a.w"], [0.6, 0.0])
    np.testing.assert_allclose(out["a.b"], [0.8])
    np.testing.assert_allclose(out["b.w"], [1.5])
    assert module_of("a.w") == module_of("a.b") == "a"


def test_clipped_updates_limit_what_a_scaled_update_can_do() -> None:
    # Prepare: the global value is 0; two honest updates of +1, one update of +100.
    reference = {"l.w": np.zeros(1)}
    parts = [({"l.w": np.array([1.0])}, 1.0), ({"l.w": np.array([1.0])}, 1.0), ({"l.w": np.array([100.0])}, 1.0)]

    # Execute
    clipped = ClippedUpdates(Mean(), 2.0).aggregate(parts, reference, None)

    # Assert: the large update counts as +2 at most.
    np.testing.assert_allclose(clipped["l.w"], [4.0 / 3.0])
