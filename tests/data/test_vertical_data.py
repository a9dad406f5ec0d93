"""Specification of a vertical task's data: blocks, masks, labels."""

import numpy as np

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical import even_column_blocks
from fedmosaic.data.vertical_data import UNLABELED, hold_out_validation, vertical_split


def test_blocks_hold_only_the_rows_their_party_has_and_labels_respect_the_budget() -> None:
    # Prepare
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2_000, 12)).astype(np.float32)
    y = rng.integers(0, 3, size=2_000)

    # Execute
    split = vertical_split(x, y, even_column_blocks(12, 4), Missingness("mcar", 0.5), np.random.default_rng(1), 300)

    # Assert
    assert split.present.any(axis=1).all()
    for k, block in enumerate(split.blocks):
        assert block.shape == (2_000, 3)
        assert np.isnan(block[~split.present[:, k]]).all()
        np.testing.assert_array_equal(block[split.present[:, k]], x[split.present[:, k], 3 * k : 3 * k + 3])
    labeled = split.labeled
    assert len(labeled) == 300
    assert split.present[labeled, 0].all()
    np.testing.assert_array_equal(split.y[labeled], y[labeled])
    assert (np.delete(split.y, labeled) == UNLABELED).all()


def test_a_budget_above_the_active_rows_labels_every_active_row() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    split = vertical_split(x, np.zeros(200, np.int64), even_column_blocks(4, 2), Missingness("mcar", 0.5), rng, 10_000)
    np.testing.assert_array_equal(split.labeled, np.flatnonzero(split.present[:, 0]))


def test_without_a_budget_every_row_keeps_its_label() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 4)).astype(np.float32)
    y = rng.integers(0, 5, size=50)
    split = vertical_split(x, y, even_column_blocks(4, 2), Missingness("mcar", 0.3), rng)
    np.testing.assert_array_equal(split.y, y)


def test_validation_is_held_out_of_the_labeled_rows_and_keeps_their_labels() -> None:
    # Prepare
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(200, 4)).astype(np.float32), rng.integers(0, 3, 200)
    split = vertical_split(x, y, even_column_blocks(4, 2), Missingness("mcar", 0.3), rng, 50)

    # Execute
    kept, validation = hold_out_validation(split, 0.2, np.random.default_rng(4))
    unchanged, none = hold_out_validation(split, 0.0, np.random.default_rng(4))

    # Assert: 10 of the 50 labeled rows move to validation; their features stay in training, unlabeled
    assert validation is not None
    assert len(validation) == 10
    assert len(kept.labeled) == 40
    moved = np.setdiff1d(split.labeled, kept.labeled)
    np.testing.assert_array_equal(validation.y, y[moved])
    np.testing.assert_array_equal(validation.blocks[1], split.blocks[1][moved])
    assert (kept.y[moved] == UNLABELED).all()
    assert kept.blocks is split.blocks
    assert none is None
    assert unchanged is split
