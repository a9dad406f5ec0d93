"""A tiny vertical task: three parties, continuous features with distinct values, a few labels."""

import numpy as np
import pytest

from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
from fedmosaic.federation import Federation, Schedule
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.testing.tiny_worlds import COLUMNS, tiny_vertical_data

from .recording import RecordingGrid

__all__ = ["COLUMNS", "tiny_vertical_data"]


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
