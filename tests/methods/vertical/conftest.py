"""A tiny vertical task: three parties, continuous features with distinct values, a few labels."""

import numpy as np
import pytest

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, hold_out_validation, vertical_split

COLUMNS = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5, 6])]


def tiny_vertical_data(
    seed: int = 0, train_missing: float = 0.3, *, missingness: Missingness | None = None, validation: float = 0.0
) -> VerticalData:
    """60 training rows (20 labeled, ``validation`` of them held out) and 30 test rows over parties of widths 3, 2, 2."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=90)
    x = (rng.normal(size=(90, 7)) + y[:, None]).astype(np.float32)
    train = vertical_split(x[:60], y[:60], COLUMNS, missingness or Missingness("mcar", train_missing), rng, 20)
    test = vertical_split(x[60:], y[60:], COLUMNS, Missingness("mcar", 0.3), rng)
    train, held_out = hold_out_validation(train, validation, rng)
    return VerticalData(train, {"MCAR 3": test}, 3, "gaussian", held_out)


@pytest.fixture
def tiny_data() -> VerticalData:
    return tiny_vertical_data()


@pytest.fixture
def validated_data() -> VerticalData:
    return tiny_vertical_data(validation=0.25)
