"""Specification of the scikit-learn digits loader."""

import numpy as np
import pytest

from fedmosaic.data.digits import load_digits_splits
from fedmosaic.errors import ConfigError


def test_digits_are_unit_range_images_with_a_channel_axis() -> None:
    # Prepare: nothing, the digits ship with scikit-learn

    # Execute
    splits = load_digits_splits()

    # Assert
    assert (len(splits.train), len(splits.test)) == (1347, 450)
    assert splits.name == "digits"
    assert splits.train.x.dtype == np.float32
    assert splits.train.x.shape[1:] == (1, 8, 8)
    assert splits.train.x.min() == 0.0
    assert splits.train.x.max() == 1.0
    assert splits.train.num_classes == 10


def test_the_split_is_stratified() -> None:
    # Prepare
    splits = load_digits_splits(test_fraction=0.25, seed=3)

    # Execute
    train_counts = np.bincount(splits.train.y, minlength=10)
    test_counts = np.bincount(splits.test.y, minlength=10)

    # Assert
    expected_test = 0.25 * (train_counts + test_counts)
    assert np.all(np.abs(test_counts - expected_test) <= 1)


def test_the_same_seed_gives_the_same_split_and_another_seed_another() -> None:
    # Prepare
    first = load_digits_splits(seed=1)

    # Execute
    again, other = load_digits_splits(seed=1), load_digits_splits(seed=2)

    # Assert
    np.testing.assert_array_equal(first.test.x, again.test.x)
    assert not np.array_equal(first.test.x, other.test.x)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_test_fraction_must_be_strictly_between_zero_and_one(fraction: float) -> None:
    # Prepare: the parameter

    # Execute
    with pytest.raises(ConfigError) as caught:
        load_digits_splits(test_fraction=fraction)

    # Assert
    assert str(caught.value) == f"data.test_fraction: must be > 0 and < 1 (got {fraction})"


def test_a_test_fraction_that_leaves_a_part_without_every_class_is_refused_on_one_line() -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        load_digits_splits(test_fraction=0.001)

    # Assert
    assert str(caught.value) == (
        "data.test_fraction: 0.001 splits the 1797 digits so that 1795 train and 2 test rows cannot each hold all"
        " 10 classes"
    )
