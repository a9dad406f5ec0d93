"""A tiny vertical task: three parties, continuous features with distinct values, a few labels."""

import numpy as np
import pytest

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, VerticalSplit, hold_out_validation, vertical_split
from fedmosaic.federation import Federation, Schedule
from fedmosaic.methods.vertical.task import VerticalTask

from .recording import RecordingGrid

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


def with_shuffled_test_labels(data: VerticalData) -> VerticalData:
    """``data`` whose test rows carry a permutation of their labels."""
    tests = {
        name: VerticalSplit(split.blocks, split.present, np.random.default_rng(9).permutation(split.y))
        for name, split in data.tests.items()
    }
    return VerticalData(data.train, tests, data.num_classes, data.likelihood, data.validation)


def train(data: VerticalData, build, params, rounds: int):  # type: ignore[no-untyped-def]
    """Run ``build``'s method ``rounds`` rounds (evaluating every round): the server, its round records and the recording grid."""
    server, factory = build(VerticalTask(data, rounds), params)
    grid = RecordingGrid(factory, 0)
    records = Federation(server, grid, Schedule(num_clients=data.num_parties - 1), seed=0, rounds=rounds).run()
    return server, records, grid


@pytest.fixture
def tiny_data() -> VerticalData:
    return tiny_vertical_data()


@pytest.fixture
def validated_data() -> VerticalData:
    return tiny_vertical_data(validation=0.25)
