"""Specification of Simpson-MNIST's sample figure."""

import struct

import numpy as np
import pytest

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.simpson import SimpsonSplits, simpson_mnist
from fedmosaic.data.simpson_figure import GRID_CELL_INCHES, GRID_DPI, sample_grid_png
from fedmosaic.errors import ConfigError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def splits() -> SimpsonSplits:
    """5 clients of 40 random 28 x 28 "digits" (1s and 7s)."""
    rng = np.random.default_rng(0)
    digits = ArrayDataset(rng.random((600, 1, 28, 28), dtype=np.float32), np.tile([1, 7], 300), num_classes=10)
    return simpson_mnist(
        DatasetSplits(digits, digits, "toy"),
        seed=0,
        num_clients=5,
        samples_per_client=40,
        pretrain_samples=50,
        validation_samples=20,
        design="bands",
    )


def test_the_sample_grid_is_a_deterministic_png(splits: SimpsonSplits) -> None:
    # Execute
    first = sample_grid_png(splits, per_client=4)
    again = sample_grid_png(splits, per_client=4)

    # Assert
    assert first.startswith(PNG_SIGNATURE)
    assert first == again


def test_the_sample_grid_gives_each_sample_a_cell_of_fixed_size(splits: SimpsonSplits) -> None:
    # Execute: 5 clients, 4 samples a row
    png = sample_grid_png(splits, per_client=4)

    # Assert: the PNG header's width and height, in pixels (a band above the rows holds the title)
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (4 * GRID_CELL_INCHES * GRID_DPI, (5 * GRID_CELL_INCHES + 0.5) * GRID_DPI)


@pytest.mark.parametrize("per_client", [0, 41])
def test_the_sample_grid_rejects_an_impossible_row_length(splits: SimpsonSplits, per_client: int) -> None:
    # Execute / Assert: clients of 40 samples
    with pytest.raises(ConfigError, match=r"simpson\.per_client: must be from 1 to 40"):
        sample_grid_png(splits, per_client=per_client)
