"""weighted_average: by name, over the replies that hold each name."""

import numpy as np
import pytest

from fedmosaic.federation import weighted_average


def test_matches_a_hand_computation() -> None:
    # Prepare
    a = {"w": np.array([1.0, 2.0]), "b": np.array([[0.0]])}
    b = {"w": np.array([3.0, 6.0]), "b": np.array([[4.0]])}

    # Execute
    out = weighted_average([(a, 1.0), (b, 3.0)])

    # Assert: (1*1 + 3*3)/4 = 2.5, (1*2 + 3*6)/4 = 5.0, (0 + 12)/4 = 3.0
    np.testing.assert_allclose(out["w"], [2.5, 5.0])
    np.testing.assert_allclose(out["b"], [[3.0]])
    assert set(out) == {"w", "b"}


def test_equal_weights_give_the_plain_mean() -> None:
    arrays = [{"w": np.array([float(i), -float(i)])} for i in range(5)]
    out = weighted_average([(a, 2.0) for a in arrays])
    np.testing.assert_allclose(out["w"], [2.0, -2.0])


def test_a_name_held_by_some_replies_is_averaged_over_those_alone() -> None:
    # Prepare
    a = {"shared": np.array([0.0]), "only_ab": np.array([10.0])}
    b = {"shared": np.array([4.0]), "only_ab": np.array([20.0])}
    c = {"shared": np.array([8.0])}

    # Execute
    out = weighted_average([(a, 1.0), (b, 3.0), (c, 4.0)])

    # Assert: only_ab renormalised over weights 1 and 3, c's weight ignored
    np.testing.assert_allclose(out["only_ab"], [(10.0 * 1 + 20.0 * 3) / 4])
    np.testing.assert_allclose(out["shared"], [(0.0 * 1 + 4.0 * 3 + 8.0 * 4) / 8])


def test_float_dtype_of_the_first_contribution_is_kept() -> None:
    a = {"w": np.array([1.0, 2.0], dtype=np.float32)}
    b = {"w": np.array([2.0, 3.0], dtype=np.float32)}
    out = weighted_average([(a, 1.0), (b, 1.0)])
    assert out["w"].dtype == np.float32
    np.testing.assert_allclose(out["w"], [1.5, 2.5])


def test_integer_arrays_are_rounded_to_the_nearest_integer() -> None:
    # Prepare: (0*1 + 10*2)/3 = 6.67 -> 7 ; (3*1 + 4*2)/3 = 3.67 -> 4 ; (9*1 + 0*2)/3 = 3 -> 3
    a = {"counts": np.array([0, 3, 9], dtype=np.int64)}
    b = {"counts": np.array([10, 4, 0], dtype=np.int64)}

    # Execute
    out = weighted_average([(a, 1.0), (b, 2.0)])

    # Assert
    assert out["counts"].dtype == np.int64
    np.testing.assert_array_equal(out["counts"], [7, 4, 3])


def test_order_of_contributions_does_not_matter() -> None:
    rng = np.random.default_rng(0)
    contributions = [({"w": rng.normal(size=4)}, float(rng.integers(1, 10))) for _ in range(6)]
    forward = weighted_average(contributions)
    backward = weighted_average(contributions[::-1])
    np.testing.assert_allclose(forward["w"], backward["w"], rtol=1e-12)


def test_inputs_are_not_modified() -> None:
    a = {"w": np.array([1.0, 2.0])}
    b = {"w": np.array([3.0, 4.0])}
    weighted_average([(a, 1.0), (b, 1.0)])
    np.testing.assert_array_equal(a["w"], [1.0, 2.0])
    np.testing.assert_array_equal(b["w"], [3.0, 4.0])


def test_read_only_inputs_are_accepted() -> None:
    w = np.array([1.0, 3.0])
    w.flags.writeable = False
    out = weighted_average([({"w": w}, 1.0)])
    np.testing.assert_array_equal(out["w"], [1.0, 3.0])
    assert not np.shares_memory(out["w"], w)


def test_no_contribution_gives_an_empty_result() -> None:
    assert weighted_average([]) == {}


def test_shape_mismatch_raises_naming_the_array() -> None:
    a = {"w": np.zeros(3)}
    b = {"w": np.zeros(4)}
    with pytest.raises(ValueError, match="'w'"):
        weighted_average([(a, 1.0), (b, 1.0)])


@pytest.mark.parametrize("weight", [0.0, -1.0, float("nan"), float("inf")])
def test_non_positive_or_non_finite_weights_raise(weight: float) -> None:
    a = {"w": np.zeros(2)}
    with pytest.raises(ValueError, match="weights must be positive and finite"):
        weighted_average([(a, 1.0), (a, weight)])
