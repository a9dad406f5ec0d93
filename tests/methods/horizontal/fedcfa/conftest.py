"""Tiny data and tasks for the FedCFA tests.

Three Gaussian blobs in 2-D (one per class) and an MLP with one hidden layer
of 8 units, so the default split gives 8 factors. The factories are fixtures
(the tests run with ``--import-mode=importlib``, where a conftest cannot be
imported as a module).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.models import ModelParams
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.train_params import TrainParams

CENTRES = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
#: Client sizes of the 3-client federation: 40 // 16, 37 // 16 and 21 // 16 chunks.
CLIENT_SIZES = (40, 37, 21)
TRAIN = TrainParams(epochs=1, batch_size=8, lr=0.1)
PARAMS = FedCFAParams(k=2, chunk_size=16, average_dataset="previous")


def _blobs(n: int, seed: int) -> ArrayDataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    x = (CENTRES[y] + 0.5 * rng.standard_normal((n, 2))).astype(np.float32)
    return ArrayDataset(x, y.astype(np.int64), num_classes=3)


@pytest.fixture
def blobs() -> Callable[[int, int], ArrayDataset]:
    """``blobs(n, seed)``: ``n`` labelled 2-D samples of 3 classes."""
    return _blobs


@pytest.fixture
def make_task() -> Callable[..., HorizontalTask]:
    """``make_task(sizes=CLIENT_SIZES)``: clients of these sizes, a test set, an 8-unit MLP."""

    def make(sizes: tuple[int, ...] = CLIENT_SIZES) -> HorizontalTask:
        clients = [_blobs(n, seed=10 + i) for i, n in enumerate(sizes)]
        return HorizontalTask(clients, _blobs(60, seed=99), ModelParams(hidden=[8]), TRAIN)

    return make


@pytest.fixture
def params() -> FedCFAParams:
    """FedCFA parameters for 8 factors and tiny clients: k = 2, chunks of 16, last round's means."""
    return PARAMS
