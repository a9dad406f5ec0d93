"""Specification of ArrayDataset and DatasetSplits."""

import numpy as np
import pytest

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.errors import FedmosaicError


def make_dataset(n: int = 5, num_classes: int = 3, features: int = 2) -> ArrayDataset:
    x = np.arange(n * features, dtype=np.float32).reshape(n, features)
    return ArrayDataset(x, np.arange(n, dtype=np.int64) % num_classes, num_classes)


def test_len_is_the_number_of_samples() -> None:
    # Prepare
    data = make_dataset(n=5)

    # Execute
    size = len(data)

    # Assert
    assert size == 5


def test_subset_selects_rows_in_the_given_order_as_copies() -> None:
    # Prepare
    data = make_dataset(n=5)

    # Execute
    part = data.subset(np.array([4, 1]))
    part.x[:] = -1

    # Assert
    assert part.y.tolist() == [1, 1]
    assert part.num_classes == data.num_classes
    assert data.x.min() == 0


@pytest.mark.parametrize(
    ("x", "y", "num_classes", "expected"),
    [
        (np.zeros((2, 3)), np.array([0, 1]), 2, "ArrayDataset.x must be a float32 array"),
        (np.zeros(2, np.float32), np.array([0, 1]), 2, "ArrayDataset.x must be a float32 array"),
        (np.zeros((2, 3), np.float32), np.array([0, 1], np.int32), 2, "ArrayDataset.y must be an int64"),
        (np.zeros((2, 3), np.float32), np.array([0, 1, 1]), 2, "same length (got 2 and 3)"),
        (np.zeros((2, 3), np.float32), np.array([0, 0]), 0, "num_classes must be >= 1 (got 0)"),
        (np.zeros((2, 3), np.float32), np.array([0, 2]), 2, "must lie in [0, 2) (got values from 0 to 2)"),
        (np.zeros((2, 3), np.float32), np.array([-1, 0]), 2, "must lie in [0, 2)"),
    ],
)
def test_invalid_arrays_are_rejected_with_a_one_line_error(
    x: np.ndarray, y: np.ndarray, num_classes: int, expected: str
) -> None:
    # Prepare: the parameters

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        ArrayDataset(x, y, num_classes)

    # Assert
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_splits_keep_their_parts_and_name() -> None:
    # Prepare
    train, test = make_dataset(n=5), make_dataset(n=2)

    # Execute
    splits = DatasetSplits(train=train, test=test, name="toy")

    # Assert
    assert (splits.train, splits.test, splits.name) == (train, test, "toy")


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        (make_dataset(features=3), "same shape (got (2,) and (3,))"),
        (make_dataset(num_classes=4), "same num_classes (got 3 and 4)"),
    ],
)
def test_splits_must_agree_on_sample_shape_and_classes(test: ArrayDataset, expected: str) -> None:
    # Prepare
    train = make_dataset()

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        DatasetSplits(train=train, test=test, name="toy")

    # Assert
    assert expected in str(caught.value)


def test_partitioned_parts_hold_the_subsets_as_views_of_one_block() -> None:
    # Prepare
    data = ArrayDataset(np.arange(20, dtype=np.float32).reshape(10, 2), np.arange(10) % 3, num_classes=3)
    parts = [np.array([9, 1]), np.array([], dtype=np.int64), np.array([4, 0, 7])]
    # Execute
    views = data.partitioned(parts)
    # Assert
    for view, part in zip(views, parts, strict=True):
        expected = data.subset(part)
        np.testing.assert_array_equal(view.x, expected.x)
        np.testing.assert_array_equal(view.y, expected.y)
    assert views[0].x.base is views[2].x.base is not None
    assert views[0].x.base.nbytes == 5 * 2 * 4
